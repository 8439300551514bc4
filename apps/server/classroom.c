/*
 * classroom.c - `blockflow serve --classroom`: who a token is, and each student's copies.
 *
 * Three kinds of token. The teacher's (app->token, printed as the teacher URL) may do
 * everything, as the one token of a plain server does. The class token (printed as the
 * student URL) may only join: POST /api/class/join {"name"} gives the student a personal token
 * of their own (random, shown once, in a personal URL). A student's token reads the teacher's
 * pages and writes only the student's own copies, kept under the pages folder in
 * .students/NAME/ (hidden: never listed, never reachable by a page name, which cannot start
 * with a dot). A copy is made from the teacher's page on the student's first edit or run.
 * Nobody but its student can change a copy; the teacher can read it ("look over a
 * shoulder"). The roster (teacher only) lists each student: connected sockets, the page they
 * view, and their last run's outcome.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

struct srv_student {
    char name[64];
    char token[64];
    srv_store store;        /* .students/NAME */
    int sockets;            /* WebSocket connections open with this student's token */
    char viewing[128];      /* the page the student's editor last said it shows */
    char last_page[128];    /* the last run's page, status, error */
    char last_status[24];
    char last_code[40];
    char last_message[256];
    char last_run[24];
};

bool srv_identify(srv_app *app, const char *token, srv_who *who) {
    memset(who, 0, sizeof(*who));
    if (srv_secret_eq(token, app->token)) {
        who->role = SRV_TEACHER;
        return true;
    }
    if (!app->classroom) return false;
    if (srv_secret_eq(token, app->class_token)) {
        who->role = SRV_JOINING;
        return true;
    }
    bool found = false;
    for (int i = 0; i < app->n_students; i++) /* every one compared: the time says nothing */
        if (srv_secret_eq(token, app->students[i]->token) && !found) {
            who->role = SRV_STUDENT;
            who->student = app->students[i];
            found = true;
        }
    return found;
}

const char *srv_who_name(const srv_who *who) { return who->student ? who->student->name : ""; }

srv_store *srv_student_store(srv_student *s) { return &s->store; }

srv_student *srv_student_find(srv_app *app, const char *name) {
    for (int i = 0; i < app->n_students; i++)
        if (!strcmp(app->students[i]->name, name)) return app->students[i];
    return NULL;
}

/* POST /api/class/join {"name": "ana"}: a personal token and URL for a new student. */
void srv_class_join(srv_app *app, const char *name, srv_response *res) {
    if (!srv_name_ok(name) || strlen(name) > 40) {
        srv_error(res, 400, "bad_name", "a student name is 1 to 40 letters, digits, '.', '_' "
                  "or '-', not starting with '.'");
        return;
    }
    if (srv_student_find(app, name)) {
        srv_error(res, 409, "exists", "a student named \"%s\" has joined; choose another name "
                  "(or ask the teacher)", name);
        return;
    }
    if (app->n_students >= app->lim.max_students) {
        srv_error(res, 503, "limit", "the class has %d students, the most allowed "
                  "(--max-students)", app->lim.max_students);
        return;
    }
    char path[4200], why[300];
    snprintf(path, sizeof(path), "%s/.students", app->store.dir);
    if (mkdir(path, 0755) && errno != EEXIST) {
        srv_error(res, 500, "io_error", "cannot make the students' folder: %s", strerror(errno));
        return;
    }
    snprintf(path, sizeof(path), "%s/.students/%s", app->store.dir, name);
    if (mkdir(path, 0755) && errno != EEXIST) {
        srv_error(res, 500, "io_error", "cannot make %s's folder: %s", name, strerror(errno));
        return;
    }
    srv_student *s = calloc(1, sizeof(*s));
    srv_student **grown = s ? realloc(app->students, (size_t)(app->n_students + 1) *
                                                         sizeof(*grown))
                            : NULL;
    if (!grown) {
        free(s);
        srv_error(res, 500, "out_of_memory", "out of memory");
        return;
    }
    app->students = grown;
    if (srv_store_open(&s->store, path, app->store.max_bytes, why, sizeof(why))) {
        free(s);
        srv_error(res, 500, "io_error", "%s", why);
        return;
    }
    snprintf(s->store.label, sizeof(s->store.label), "%s", name);
    snprintf(s->name, sizeof(s->name), "%s", name);
    srv_random_hex(s->token, 49);
    app->students[app->n_students++] = s;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "token", s->token);
    char url[160];
    snprintf(url, sizeof(url), "%s/?token=%s", app->prefix, s->token);
    cJSON_AddStringToObject(o, "url", url);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    srv_json(res, 201, text);
}

/* GET /api/class/me: who this token is (the editor shows the teacher's or a student's view). */
void srv_class_me(srv_app *app, const srv_who *who, srv_response *res) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "classroom", app->classroom);
    cJSON_AddStringToObject(o, "role", who->role == SRV_TEACHER   ? "teacher"
                                       : who->role == SRV_STUDENT ? "student"
                                                                  : "joining");
    if (who->student) cJSON_AddStringToObject(o, "name", who->student->name);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    srv_json(res, 200, text);
}

/*
 * A student's copy of teacher page `name`, made now when there is none (exclusive create, so
 * two first edits at once make one copy). 0, or a negative errno of the store.
 */
int srv_class_ensure_copy(srv_app *app, srv_student *s, const char *name) {
    char *text;
    size_t len;
    int rc = srv_store_read(&s->store, name, &text, &len);
    if (rc == 0) {
        free(text);
        return 0;
    }
    if (rc != -ENOENT) return rc;
    if ((rc = srv_store_read(&app->store, name, &text, &len))) return rc;
    rc = srv_store_write(&s->store, name, text, len, true);
    free(text);
    return rc == -EEXIST ? 0 : rc;
}

/* Replace a student's copy with the teacher's page as it is now ("update my copy"). */
int srv_class_update_copy(srv_app *app, srv_student *s, const char *name) {
    char *text;
    size_t len;
    int rc = srv_store_read(&app->store, name, &text, &len);
    if (rc) return rc;
    rc = srv_store_write(&s->store, name, text, len, false);
    free(text);
    return rc;
}

void srv_class_socket(srv_app *app, const srv_who *who, int delta) {
    (void)app;
    if (who->student) who->student->sockets += delta;
}

void srv_class_viewing(srv_app *app, const srv_who *who, const char *page) {
    (void)app;
    if (who->student) snprintf(who->student->viewing, sizeof(who->student->viewing), "%s", page);
}

void srv_class_run_done(srv_app *app, const char *student, const char *run_id,
                        const char *page, const char *status, const char *code,
                        const char *message) {
    srv_student *s = student[0] ? srv_student_find(app, student) : NULL;
    if (!s) return;
    snprintf(s->last_run, sizeof(s->last_run), "%s", run_id);
    snprintf(s->last_page, sizeof(s->last_page), "%s", page);
    snprintf(s->last_status, sizeof(s->last_status), "%s", status);
    snprintf(s->last_code, sizeof(s->last_code), "%s", code ? code : "");
    snprintf(s->last_message, sizeof(s->last_message), "%s", message ? message : "");
}

/* GET /api/class/roster (teacher): every student, connected or not, and what they do. */
void srv_class_roster(srv_app *app, srv_response *res) {
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "students");
    for (int i = 0; i < app->n_students; i++) {
        const srv_student *s = app->students[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", s->name);
        cJSON_AddBoolToObject(e, "connected", s->sockets > 0);
        cJSON_AddStringToObject(e, "page", s->viewing);
        char *copies = srv_store_list_json((srv_store *)&s->store);
        cJSON *c = copies ? cJSON_Parse(copies) : NULL;
        free(copies);
        cJSON_AddItemToObject(e, "copies", c ? c : cJSON_CreateArray());
        if (s->last_run[0]) {
            cJSON *r = cJSON_AddObjectToObject(e, "last_run");
            cJSON_AddStringToObject(r, "run_id", s->last_run);
            cJSON_AddStringToObject(r, "page", s->last_page);
            cJSON_AddStringToObject(r, "status", s->last_status);
            if (s->last_code[0]) {
                cJSON_AddStringToObject(r, "code", s->last_code);
                cJSON_AddStringToObject(r, "message", s->last_message);
            }
        } else {
            cJSON_AddNullToObject(e, "last_run");
        }
        cJSON_AddItemToArray(arr, e);
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    srv_json(res, 200, text);
}

void srv_class_free(srv_app *app) {
    for (int i = 0; i < app->n_students; i++) {
        srv_store_close(&app->students[i]->store);
        free(app->students[i]);
    }
    free(app->students);
    app->students = NULL;
    app->n_students = 0;
}
