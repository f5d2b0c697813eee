"""The posture cards and the posture choices of the Compare and Lab pages."""
