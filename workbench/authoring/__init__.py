"""Authoring skills, headless: new skills from a template (`template.create_skill`), `.skill`
packages (`package.export_skill`, `package.import_skill`) and the capability preview
(`preview.preview`); the window's side is `workbench.ui.authoring`.
"""
