"""This machine and this process: where data and resources live, how the workbench starts
its own modules, and the desktop launcher entry."""
