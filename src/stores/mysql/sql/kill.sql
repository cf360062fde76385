-- End the session ? (a holder past its lease).
KILL CONNECTION ?
