"""Local process launching and supervision (psjob launch / psjob run)."""
