"""Pictures and pages of a job's tables: window timelines, data quality over time, offline Data Docs.

Everything here reads the Delta tables a job wrote and writes self-contained
files (inline SVG, inline CSS, no remote URL), so a page opens on a machine
without internet. Nothing here is imported by the windowing core.
"""
