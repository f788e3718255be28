"""Readings of runs, one module per claim: each turns a run's entry (this build's or a recorded
one) into typed rows (frozen dataclasses of numbers) that the chapters render with
``report.table`` and glue into their sentences. No module here returns prose.
"""
