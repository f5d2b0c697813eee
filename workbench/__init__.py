"""Skill Workbench: browse agent skills and run them under a chosen sandbox posture.

Importing this package pulls in no Qt, Docker or psutil; it only carries the version.
"""

__version__ = "0.1.0"
