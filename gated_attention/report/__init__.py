"""Report: what the chapters show. The scorecard (paper values, criteria, records) and plots."""
