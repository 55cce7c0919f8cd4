"""What each prompt's reply must be: the query-time roles' contracts (``method``) and the
memory builder's (``builder``), made of the tolerant field types in ``fields``."""
