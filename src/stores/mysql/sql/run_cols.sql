-- A run record's columns (runs.c, collect()), each prefixed {{p}}.
{{p}}full_name, {{p}}fence, {{p}}host, {{p}}pid, {{p}}start_ms, {{p}}end_ms, {{p}}result, {{p}}status
