/* Option parsing, usage errors and help text shared by every command. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static void print_command_help(const tool_command *command)
{
    printf("Usage: zecache [--dir DIR] %s\n\n%s.\n", command->synopsis, command->summary);
    if (command->details[0] != '\0')
        printf("\n%s", command->details);
    printf("\nEvery command also takes --dir DIR (the cache directory; default: NEO_CACHE_DIR,\n"
           "else $XDG_CACHE_HOME/neo_compiler_cache or ~/.cache/neo_compiler_cache) and --help.\n");
}

void tool_print_help(const tool_context *tool)
{
    if (tool->command != NULL)
        print_command_help(tool->command);
    else
        tool_print_main_help();
}

static void print_prefix(const tool_context *tool)
{
    fprintf(stderr, "zecache%s%s: ", tool->command != NULL ? " " : "",
            tool->command != NULL ? tool->command->name : "");
}

int tool_usage_error(const tool_context *tool, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    print_prefix(tool);
    vfprintf(stderr, format, args);
    va_end(args);
    if (tool->command != NULL)
        fprintf(stderr, "\nTry 'zecache help %s'.\n", tool->command->name);
    else
        fprintf(stderr, "\nTry 'zecache --help'.\n");
    return TOOL_EXIT_USAGE;
}

int tool_fail(const tool_context *tool, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    print_prefix(tool);
    vfprintf(stderr, format, args);
    va_end(args);
    fputc('\n', stderr);
    return TOOL_EXIT_FAILURE;
}

bool tool_set_dir(tool_context *tool, const char *dir)
{
    if (dir[0] == '\0')
        return false;
    tool->dir_option = dir;
    return setenv("NEO_CACHE_DIR", dir, 1) == 0;
}

/* getopt_long says '?' both for unknown options and for a value given to
 * one that takes none ("--fix=yes"). */
static void report_bad_option(const tool_context *tool, const char *arg,
                              const struct option *options)
{
    size_t name_length = strcspn(arg, "=");
    for (const struct option *option = options; option->name != NULL; option++) {
        if (arg[name_length] == '=' && strncmp(arg, "--", 2) == 0 &&
            strlen(option->name) == name_length - 2 &&
            strncmp(option->name, arg + 2, name_length - 2) == 0) {
            tool_usage_error(tool, "option '--%s' takes no value", option->name);
            return;
        }
    }
    tool_usage_error(tool, "unknown option '%s'", arg);
}

int tool_next_option(tool_context *tool, int argc, char **argv, const struct option *options)
{
    opterr = 0; /* the messages below name the command */
    for (;;) {
        /* "+": stop at the first operand, so exec's program keeps its options;
         * ":": report a missing value as ':' rather than '?'. */
        int option = getopt_long(argc, argv, "+:h", options, NULL);
        switch (option) {
        case -1:
            return TOOL_OPTIONS_DONE;
        case 'h':
            tool_print_help(tool);
            return TOOL_OPTIONS_HELP;
        case TOOL_OPTION_DIR:
            if (!tool_set_dir(tool, optarg)) {
                tool_usage_error(tool, "--dir needs a non-empty directory");
                return TOOL_OPTIONS_BAD;
            }
            continue;
        case ':':
            tool_usage_error(tool, "option '%s' needs a value", argv[optind - 1]);
            return TOOL_OPTIONS_BAD;
        case '?':
            report_bad_option(tool, argv[optind - 1], options);
            return TOOL_OPTIONS_BAD;
        default:
            return option;
        }
    }
}

int tool_options_exit(int result)
{
    return result == TOOL_OPTIONS_HELP ? TOOL_EXIT_OK : TOOL_EXIT_USAGE;
}

int tool_parse_plain(tool_context *tool, int argc, char **argv, int operand_count)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    return tool_end_options(tool, tool_next_option(tool, argc, argv, options), argc, argv,
                            operand_count);
}

int tool_end_options(tool_context *tool, int last, int argc, char **argv, int operand_count)
{
    if (last != TOOL_OPTIONS_DONE)
        return tool_options_exit(last);
    if (argc - optind < operand_count)
        return tool_usage_error(tool, "missing operand");
    if (argc - optind > operand_count)
        return tool_usage_error(tool, "unexpected operand '%s'", argv[optind + operand_count]);
    return TOOL_OPTIONS_DONE;
}
