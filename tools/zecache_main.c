/* zecache: inspects and maintains zecache's persistent cache, and runs
 * programs with its Level Zero layer enabled. This file: global options and
 * dispatch to the commands (cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include "tool.h"

static int run_help(tool_context *tool, int argc, char **argv);

static const tool_command tool_cmd_help = {
    .name = "help",
    .synopsis = "help [COMMAND]",
    .summary = "Show the help of the tool or of one command",
    .details = "",
    .run = run_help,
};

static const tool_command *const commands[] = {
    &tool_cmd_exec,   &tool_cmd_stats,  &tool_cmd_zero_stats, &tool_cmd_ls,
    &tool_cmd_show,   &tool_cmd_verify, &tool_cmd_trim,       &tool_cmd_clear,
    &tool_cmd_export, &tool_cmd_import, &tool_cmd_pack,       &tool_cmd_prewarm,
    &tool_cmd_record, &tool_cmd_config, &tool_cmd_remote,     &tool_cmd_help,
};

static const tool_command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

void tool_print_main_help(void)
{
    printf("Usage: zecache [--dir DIR] COMMAND [OPTIONS] [OPERANDS]\n"
           "\n"
           "Inspect and maintain zecache's persistent Level Zero compiler cache, or run a\n"
           "program with the cache's layer enabled.\n"
           "\n"
           "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        printf("  %-12s %s\n", commands[i]->name, commands[i]->summary);
    printf("\n"
           "Options:\n"
           "  --dir DIR    the cache directory (default: NEO_CACHE_DIR, else\n"
           "               $XDG_CACHE_HOME/neo_compiler_cache or ~/.cache/neo_compiler_cache)\n"
           "  --help       this help; 'zecache help COMMAND' or 'zecache COMMAND --help'\n"
           "               for a command's\n"
           "  --version    the version, the build's options and the libraries' versions\n"
           "\n"
           "The other settings come from the environment, as the layer reads them\n"
           "(NEO_CACHE_MAX_SIZE, ...: see 'zecache config').\n"
           "\n"
           "Exit status: 0 success, 1 failure or problems found, 2 bad usage; exec passes\n"
           "on the program's own.\n");
}

static int run_help(tool_context *tool, int argc, char **argv)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int option = tool_next_option(tool, argc, argv, options);
    if (option != TOOL_OPTIONS_DONE)
        return tool_options_exit(option);
    if (argc - optind > 1)
        return tool_usage_error(tool, "unexpected operand '%s'", argv[optind + 1]);
    tool_context about = {.command = NULL};
    if (optind < argc && (about.command = find_command(argv[optind])) == NULL)
        return tool_usage_error(tool, "unknown command '%s'", argv[optind]);
    tool_print_help(&about);
    return TOOL_EXIT_OK;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        TOOL_COMMON_OPTIONS, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    tool_context tool = {.command = NULL, .dir_option = NULL};
    int option = tool_next_option(&tool, argc, argv, options);
    if (option == 'V')
        return tool_print_version();
    if (option != TOOL_OPTIONS_DONE)
        return tool_options_exit(option);
    if (optind == argc)
        return tool_usage_error(&tool, "no command given");
    tool.command = find_command(argv[optind]);
    if (tool.command == NULL)
        return tool_usage_error(&tool, "unknown command '%s'", argv[optind]);
    /* The command parses its own options from a fresh start, with its name in
     * argv[0] for messages. */
    char command_name[64];
    snprintf(command_name, sizeof command_name, "zecache %s", tool.command->name);
    char **command_argv = argv + optind;
    command_argv[0] = command_name;
    optind = 0;
    return tool.command->run(&tool, argc - (int)(command_argv - argv), command_argv);
}
