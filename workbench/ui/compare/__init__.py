"""The Compare page: one command under several postures, side by side (`view.CompareView`)."""
