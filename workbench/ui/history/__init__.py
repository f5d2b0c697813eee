"""The History page: past runs, their records, re-run, export and restore (`view.HistoryView`),
worded by `rows`.
"""
