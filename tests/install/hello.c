/* hello.c - a program outside the source tree, built against an installed blockflow: loads a
 * page from a string, runs it and prints the result. Exit 0 when the result is right. */
#include <blockflow.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    static const char page_json[] =
        "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":[{\"id\":\"c\",\"type\":\"Const\","
        "\"attrs\":{\"value\":[1.5,2.5]}},{\"id\":\"i\",\"type\":\"Identity\",\"inputs\":"
        "{\"input\":\"c\"}}],\"outputs\":[\"i\"]}";
    bf_context *ctx = NULL;
    bf_page *page = NULL;
    bf_session *s = NULL;
    bf_error e = {0};
    if (bf_context_new(NULL, &ctx, &e) ||
        bf_page_load_string(ctx, page_json, strlen(page_json), "hello", NULL, &page, NULL, &e) ||
        bf_session_new(ctx, page, &s, &e) || bf_session_run(s, NULL, NULL, &e)) {
        fprintf(stderr, "hello: %s\n", e.message);
        return 1;
    }
    const bf_tensor *t = bf_session_output(s, "i", NULL);
    int ok = t && bf_tensor_get_f64(t, 1) == 2.5;
    printf("blockflow %s: i[1] = %g\n", BF_VERSION_STRING, t ? bf_tensor_get_f64(t, 1) : -1.0);
    bf_session_free(s);
    bf_context_free(ctx);
    return ok ? 0 : 1;
}
