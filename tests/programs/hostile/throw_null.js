throw null
