-- A row the server stored with substitutions: it goes by its owner token.
DELETE FROM {{table}} WHERE owner = ?
