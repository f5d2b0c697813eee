"""The probe Lab page: the scoreboard of what each posture really stops (`view.LabView`)."""
