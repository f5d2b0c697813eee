"""The Skills page's parts: the browser, one skill's view and files, and watching them on disk."""
