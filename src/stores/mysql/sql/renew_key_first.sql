-- The first key of the batch's IN list (renew_where.sql's {{keys}}).
?
