"""What ix hands to other tools rather than answers itself: the CI workflow `ix ci init`
writes (`ci`, its text in `ci_text`), the webhook a run or battery posts when it ends
(`notify`), and the experiment `ix new` scaffolds (`scaffold`)."""
