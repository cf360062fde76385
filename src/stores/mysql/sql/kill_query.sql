-- Cancel a wait: end the GET_LOCK running on session ?.
KILL QUERY ?
