/* test_strings.c - strings cJSON would pass on silently are refused on load
 * (sc_json_parse): the escape \u0000, which cut "cpu\u0000evil" to "cpu",
 * and bytes that are not UTF-8, which ended up in plans that Python's json
 * cannot read. The message names the file, the JSON path, line and column.
 * The corpora (tests/corpus/{model,cluster,timeline}) hold one of each per
 * format. */
#include "check.h"
#include "json.h"

#include <limits.h>
#include <stdlib.h>

static char out[1 << 14];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

/* Parses text; returns its status and leaves the message in msg. */
static sc_status parse(const char *text, char *msg, size_t cap)
{
    cJSON *j = NULL;
    sc_error err = {0};
    sc_status st = sc_json_parse("t.json", text, strlen(text), &j, &err);
    cJSON_Delete(j);
    snprintf(msg, cap, "%s", err.msg);
    return st;
}

TEST(strings_refused_with_path)
{
    char m[SC_ERRMSG_MAX];
    /* \u0000 in a value, at every depth, and in a key */
    CHECK_EQ_INT(parse("{\"name\": \"cpu\\u0000evil\"}", m, sizeof m), SC_EPARSE);
    CHECK_STR_HAS(m, "t.json: name: the string contains \\u0000");
    CHECK_STR_HAS(m, "(line 1, column 14)");
    CHECK_EQ_INT(parse("{\"a\": [{\"b\": \"x\"}, {\"c\": 1, \"b\": \"\\u0000\"}]}", m, sizeof m),
                 SC_EPARSE);
    CHECK_STR_HAS(m, "t.json: a[1].b: the string contains \\u0000");
    CHECK_EQ_INT(parse("{\"a\": {\"b\": [[1, 2], [3, \"q\\u0000\"]]}}", m, sizeof m), SC_EPARSE);
    CHECK_STR_HAS(m, "t.json: a.b[1][1]: the string");
    CHECK_EQ_INT(parse("{\"a\": {\"k\\u0000\": 1}}", m, sizeof m), SC_EPARSE);
    CHECK_STR_HAS(m, "t.json: a.k\\u0000 (a key): the string contains \\u0000");
    CHECK_EQ_INT(parse("[\"ok\", \"\\u0000\"]", m, sizeof m), SC_EPARSE);
    CHECK_STR_HAS(m, "t.json: [1]: the string contains");
    CHECK_EQ_INT(parse("\"\\u0000\"", m, sizeof m), SC_EPARSE);
    CHECK_STR_HAS(m, "t.json: (top level): the string contains");
    /* not UTF-8: a stray byte, a cut sequence, an overlong form, a
     * surrogate, past U+10FFFF; a second line counts lines */
    CHECK_EQ_INT(parse("{\"name\": \"m\xff\"}", m, sizeof m), SC_EPARSE);
    CHECK_STR_HAS(m, "t.json: name: the string is not valid UTF-8 (byte 0xff at line 1, column 12)");
    CHECK_EQ_INT(parse("{\"x\": 1,\n \"name\": \"\xc3\"}", m, sizeof m), SC_EPARSE);
    CHECK_STR_HAS(m, "byte 0xc3 at line 2, column 11");
    CHECK_EQ_INT(parse("{\"n\": \"\xc0\xaf\"}", m, sizeof m), SC_EPARSE);
    CHECK_EQ_INT(parse("{\"n\": \"\xe0\x80\xaf\"}", m, sizeof m), SC_EPARSE);
    CHECK_EQ_INT(parse("{\"n\": \"\xed\xa0\x80\"}", m, sizeof m), SC_EPARSE);
    CHECK_EQ_INT(parse("{\"n\": \"\xf4\x90\x80\x80\"}", m, sizeof m), SC_EPARSE);
    CHECK_EQ_INT(parse("{\"n\": \"\x80\"}", m, sizeof m), SC_EPARSE);
    CHECK_EQ_INT(parse("{\"n\xfe\": 1}", m, sizeof m), SC_EPARSE);
    CHECK_STR_HAS(m, "n\\xfe (a key): the string is not valid UTF-8");
}

TEST(strings_valid_ones_load)
{
    char m[SC_ERRMSG_MAX];
    /* UTF-8 of every length, escapes that are not \u0000 (an escaped
     * backslash before "u0000" is the text \u0000, not a NUL), a pair */
    CHECK_EQ_INT(parse("{\"n\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"}",
                       m, sizeof m),
                 SC_OK);
    CHECK_EQ_INT(parse("{\"n\": \"a\\\\u0000b \\u0001 \\ud83d\\ude00 \\\" \\u00e9\"}", m,
                       sizeof m),
                 SC_OK);
    CHECK_EQ_INT(parse("{\"a\\\\\": \"\\\\\", \"b\": [\"\", \"\\\"\"]}", m, sizeof m), SC_OK);
}

/* Through the command: nothing is planned from such a file. */
TEST(strings_cli_refuses_and_writes_nothing)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(SC("%s cluster show p4d.24xlarge --json | sed 's/\"p4d.24xlarge\"/\"cpu\\\\u0000evil\"/' "
               "> %s/c.json && grep -c 'u0000' %s/c.json",
               bin, d, d) == 0);
    CHECK_EQ_INT(SC("%s plan --model gpt-1.3b --cluster %s/c.json --nodes 1 --global-batch 8 "
                    "-o %s/plan.json",
                    bin, d, d),
                 2);
    CHECK_STR_HAS(out, "c.json: name: the string contains \\u0000");
    CHECK(!sc_test_exists(strcat(strcpy(out, d), "/plan.json")));
    REQUIRE(SC("%s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 16 --vocab 100 -o - | "
               "sed 's/\"blocks.0\"/\"blocks.\\xff\"/' > %s/m.json",
               bin, d) == 0);
    CHECK_EQ_INT(SC("%s sim --model %s/m.json --cluster p4d.24xlarge --dp 1 --tp 1 --pp 1 "
                    "--microbatches 1 --mbs 1 -o %s/plan.json",
                    bin, d, d),
                 2);
    CHECK_STR_HAS(out, "m.json: root.children[1].name: the string is not valid UTF-8 (byte 0xff");
    CHECK(!sc_test_exists(strcat(strcpy(out, d), "/plan.json")));
}
