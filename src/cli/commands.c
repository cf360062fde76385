/*
 * commands.c - the commands main.c dispatches to, each with its option
 * table: what the shell completions (completion.c) are made from.
 */
#include <string.h>

#include "run.h"

/* One entry a command: its word, function, option table, operands (" --
 * CMD" in them: a command line follows "--"), what it does, hidden. */
const struct cli_cmd cli_cmds[] = {
    {"run", cmd_run, cli_run_opts, "NAME -- CMD",
     "run CMD while holding the lock NAME", 0},
    {"elect", cmd_elect, cli_elect_opts, "NAME -- CMD",
     "campaign for NAME; run CMD while leading", 0},
    {"leader", cmd_leader, cli_leader_opts, "NAME", "who leads NAME", 0},
    {"status", cmd_status, cli_status_opts, "NAME",
     "who holds NAME, its last run", 0},
    {"list", cmd_list, cli_list_opts, "[PREFIX]",
     "held locks and names that have run", 0},
    {"history", cmd_history, cli_history_opts, "NAME",
     "the recorded runs of NAME", 0},
    {"release", cmd_release, cli_release_opts, "--force NAME",
     "break a stuck lock (administration)", 0},
    {"init", cmd_init, cli_init_opts, "",
     "create the store's tables (or print the DDL)", 0},
    {"completion", cmd_completion, cli_completion_opts, "bash|zsh|fish",
     "print the shell completion script", 0},
    {NULL, NULL, NULL, NULL, NULL, 0},
};

const struct cli_cmd *cli_cmd_find(const char *word)
{
    for (const struct cli_cmd *c = cli_cmds; c->name != NULL; c++)
        if (strcmp(word, c->name) == 0)
            return c;
    return NULL;
}
