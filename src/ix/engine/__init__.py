"""Plans and executes runs: cases x subjects x trials on the Matrix, recorded as they finish."""
