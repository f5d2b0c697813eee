"""The desktop app's widgets: the only package that imports PySide6 and qasync.

`workbench.ui.app` builds the services and hands them to `mainwindow.MainWindow`; nothing in
here reaches for globals, and nothing outside this package (and `workbench.ui.app`) imports Qt.
"""
