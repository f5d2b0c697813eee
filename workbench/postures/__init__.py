"""Executor postures as typed data: `model` holds the `Posture`, its ids, settings and limits;
`containment` the one table of what each posture stops; `description` the card and warnings
(`assess`) a user reads, built from that table.
"""
