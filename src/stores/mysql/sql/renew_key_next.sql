-- Every other key of the batch's IN list, after a comma.
,?
