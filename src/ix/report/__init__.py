"""Presenting results: tables for the terminal now; reports, leaderboards and charts later."""
