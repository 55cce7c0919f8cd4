"""What each prompt's reply must be: the query-time roles' contracts (``method``), the
memory builder's (``builder``) and eval's judge of free-form answers (``judge``), made of
the tolerant field types in ``fields``."""
