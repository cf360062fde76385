-- A session going back to the pool lets every advisory key go.
SELECT pg_advisory_unlock_all()
