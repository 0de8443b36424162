"""The Spark audit of what each replica was sent. Not implemented yet: see issue 5."""
