"""The filesystem side of ix: lab resolution, loading experiments, results and run folders."""
