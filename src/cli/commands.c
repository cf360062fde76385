/*
 * commands.c - the commands main.c dispatches to, each with its option
 * table: what the shell completions (completion.c) are made from; and
 * `dlock completion SHELL`, which prints them.
 */
#include <string.h>

#include "run.h"

static const char completion_help[] =
    "usage: dlock completion bash|zsh|fish\n"
    "\n"
    "Print the completion script for the shell, made from dlock's own\n"
    "option tables (the packages install them):\n"
    "  bash: source <(dlock completion bash)\n"
    "  zsh:  dlock completion zsh > ~/.zfunc/_dlock (a directory in\n"
    "        $fpath), then compinit\n"
    "  fish: dlock completion fish > ~/.config/fish/completions/dlock.fish\n";

const struct cli_opt cli_completion_opts[] = {
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

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
    {"history", cmd_history, cli_history_opts, "[NAME]",
     "the recorded runs of NAME (or every name's last)", 0},
    {"metrics", cmd_metrics, cli_metrics_opts, "[PREFIX]",
     "every name's runs and holders as Prometheus text", 0},
    {"suspend", cmd_suspend, cli_suspend_opts, "NAME",
     "suspend the job NAME on every host", 0},
    {"resume", cmd_resume, cli_resume_opts, "NAME", "lift NAME's suspension",
     0},
    {"release", cmd_release, cli_release_opts, "--force NAME",
     "break a stuck lock (administration)", 0},
    {"init", cmd_init, cli_init_opts, "",
     "create the store's tables (or print the DDL)", 0},
    {"check", cmd_check, cli_check_opts, "",
     "is the store usable for dlock from here?", 0},
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

static int take_none(void *ctx, int key, const char *a, const char *val)
{
    (void)ctx, (void)key, (void)a, (void)val;
    return 0;
}

int cmd_completion(const struct cli *c, int argc, char **argv)
{
    static const struct cli_args args = {
        "completion",   cli_completion_opts, "bash|zsh|fish", "SHELL", 1,
        completion_help};
    const char *sh;
    int rc;

    (void)c;
    rc = cli_args_parse(&args, argc, argv, take_none, NULL, &sh);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (cli_completion_write(stdout, sh, cli_cmds) != 0) {
        cli_err("completion: no completion for '%s': bash, zsh or fish",
                cli_arg_shown(sh));
        return EXIT_USAGE;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_err("completion: cannot write the script");
        return EXIT_INTERNAL;
    }
    return 0;
}
