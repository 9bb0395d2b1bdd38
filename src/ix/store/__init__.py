"""What runs wrote: the trial log, run folders and their spec, summaries, annotations, tags,
the audit log and the observation cache, each written so a crash never leaves half a file."""
