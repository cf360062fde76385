-- End the session %llu (a holder past its lease).
KILL CONNECTION %llu
