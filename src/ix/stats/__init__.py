"""Pure statistics on numbers and arrays (numpy/scipy): knows nothing of experiments."""
