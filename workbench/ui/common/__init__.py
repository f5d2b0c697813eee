"""Small widgets and wording helpers every page of the window shares."""
