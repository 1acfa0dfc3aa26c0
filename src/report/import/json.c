/*
 * The JSON reader of json.h: yajl's callback parser over the text, a frame
 * per open container, a set of member names per open object (duplicates in
 * O(1), base/strset.h), and the values kept allocated from an arena freed at
 * once.  yajl checks the grammar; strings (UTF-8, no NUL), numbers (finite
 * doubles), depth and duplicate names are checked here, so that each error
 * keeps the reader's documented message.
 */
#include "config.h"

#include "report/import/json.h"

#include "base/strset.h"
#include "base/util.h"

#include <yajl/yajl_parse.h>

#include <errno.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One block of the arena: the tree's values, names and strings. */
typedef struct chunk {
    struct chunk *prev;
    size_t used, size;
    _Alignas(max_align_t) char data[];
} chunk_t;

/* The stream's names (cp_json_stream_t.names) among the member names of a set: its name's pointer
 * for each of the set's first KNOWN ids (NULL: not one of them), found once when the name is put,
 * read after as the names match the last object's.  Sets past KNOWN_DEPTH, or ids past KNOWN,
 * look the names up each time. */
enum { KNOWN = 32, KNOWN_DEPTH = 16 };
typedef struct known {
    const char *name[KNOWN];
} known_t;

/* An open container: the value kept (NULL: skipped), its kids so far. */
typedef struct frame {
    cp_json_t *v, *first, *last;
    char *key;     /* the pending member name, where kept */
    int keep_next; /* the next member or element is kept */
    int stream;    /* its elements go to each() one at a time (cp_json_read_fd) */
    /* an object's member names (of the builder's names, chosen by where the object is),
     * how many it has had, and while they are those of the last object there, in order
     * (shaped: a stream's entries are alike), how many of that one's they matched */
    cp_strset_t *names;
    known_t *known; /* the stream's names among them (NULL: looked up each time) */
    size_t nkeys, matched;
    int shaped;
} frame_t;

/* The sets of member names at a depth: one for each of the first member places of the parent
 * object (a stream's entry holds objects of a different shape at each, as nccl-inspector's
 * header, metadata and coll_perf), the last for the rest and for the elements of an array. */
enum { SHAPES = 4 };

typedef struct builder {
    const char *text;
    size_t len, base; /* base: where yajl's current buffer starts */
    size_t nl;        /* the buffer's next newline not yet counted (len: none) */
    int line;
    yajl_handle h;
    chunk_t *arena;
    const char *const *keep;
    size_t values, max_values;
    /* streaming (cp_json_read_fd): the element being read lives in its own arena, freed
     * (but its first block) once each() has seen it */
    const cp_json_stream_t *s;
    chunk_t *earena;
    cp_json_t *elem;
    int in_elem;
    size_t evalues;
    int depth; /* open containers: fr[1..depth] */
    frame_t fr[CP_JSON_MAX_DEPTH + 1];
    /* the member names of the last object at each depth and place: while an object's names
     * are that one's, in order, they are only compared with them (which had no two alike) */
    cp_strset_t names[CP_JSON_MAX_DEPTH + 1][SHAPES];
    known_t known[KNOWN_DEPTH][SHAPES];
    cp_json_t *root;
    cp_json_error_t *e;
} builder_t;

/* Count the newlines before at (each found once, memchr to the next one). */
static __attribute__((noinline)) void count_lines(builder_t *b, size_t at)
{
    at = at > b->len ? b->len : at;
    while (b->nl < at) {
        b->line++;
        const char *next = memchr(b->text + b->nl + 1, '\n', b->len - b->nl - 1);
        b->nl = next != NULL ? (size_t)(next - b->text) : b->len;
    }
}

/* The line yajl has read to: inline, as every value asks, and mostly between two values of one
 * line (the buffer's next newline past where yajl is: no count), or past the buffer's last
 * newline (no need to ask yajl where it is). */
static inline int line_now(builder_t *b)
{
    if (b->nl < b->len) {
        size_t at = b->base + yajl_get_bytes_consumed(b->h);
        if (b->nl < at) {
            count_lines(b, at);
        }
    }
    return b->line;
}

/* Record the error (the first one) and stop the parse: yajl's "cancel" (0). */
static int fail(builder_t *b, int too_large, const char *what)
{
    if (b->e->msg[0] == '\0') {
        b->e->line = line_now(b);
        b->e->too_large = too_large;
        snprintf(b->e->msg, sizeof(b->e->msg), "%s", what);
    }
    return 0;
}

/* A new block of at least n bytes on *arena: it, or NULL. */
static chunk_t *arena_grow(chunk_t **arena, size_t n)
{
    size_t size = n > (1u << 20) ? n : (1u << 20);
    chunk_t *c = malloc(sizeof(*c) + size);
    if (c != NULL) {
        c->prev = *arena;
        c->used = 0;
        c->size = size;
        *arena = c;
    }
    return c;
}

/* n bytes from the element's arena (while one is read) or the tree's: inline, as every value,
 * name and string takes one. */
static inline void *arena_alloc(builder_t *b, size_t n)
{
    chunk_t **arena = b->in_elem ? &b->earena : &b->arena;
    n = (n + 15) & ~(size_t)15;
    chunk_t *c = *arena;
    if (n == 0 || n > SIZE_MAX / 2) {
        return NULL;
    }
    if ((c == NULL || c->size - c->used < n) && (c = arena_grow(arena, n)) == NULL) {
        return NULL;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static char *arena_str(builder_t *b, const unsigned char *s, size_t len)
{
    char *p = len < SIZE_MAX ? arena_alloc(b, len + 1) : NULL;
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

/* A string or name of valid UTF-8 without NUL (\u0000 decoded): 1, else 0 after the error. */
static int check_string(builder_t *b, const unsigned char *s, size_t len)
{
    const char *why = cp_json_text_error(s, len);
    return why == NULL ? 1 : fail(b, 0, why);
}

/* A new value of type t where the parse is: *out, or NULL when it is not kept; 0 or -1. */
static int new_value(builder_t *b, cp_json_type_t t, cp_json_t **out)
{
    frame_t *f = b->depth > 0 ? &b->fr[b->depth] : NULL;
    int starts = f != NULL ? f->stream : b->s != NULL && b->s->many && b->s->each != NULL;
    *out = NULL;
    if (f != NULL && !f->keep_next) {
        return 0;
    }
    if (starts) { /* an element to stream: counted and kept apart */
        b->in_elem = 1;
        b->evalues = 0;
    }
    size_t *count = b->in_elem ? &b->evalues : &b->values;
    if ((*count)++ >= b->max_values) {
        char msg[128];
        snprintf(msg, sizeof(msg), "more than %zu values in the parts import reads", b->max_values);
        return fail(b, 1, msg) - 1;
    }
    cp_json_t *v = arena_alloc(b, sizeof(*v));
    if (v == NULL) {
        return fail(b, 0, "out of memory") - 1;
    }
    /* field by field: a memset of the struct is a slow "rep stos" here, once per value */
    v->type = t;
    v->line = line_now(b);
    v->boolean = v->is_int = 0;
    v->num = 0;
    v->inum = 0;
    v->str = NULL;
    v->n = 0;
    v->kids = NULL;
    v->keys = NULL;
    v->keybits = 0;
    v->next = NULL;
    v->name = NULL;
    v->arena = NULL;
    if (starts) {
        b->elem = v;
    } else if (f == NULL) {
        b->root = v;
    } else {
        v->name = f->key;
        f->key = NULL;
        *(f->last != NULL ? &f->last->next : &f->first) = v;
        f->last = v;
        f->v->n++;
    }
    *out = v;
    return 0;
}

/* A value is complete: where it is a streamed element, each() sees it and it goes.  1, or 0
 * (yajl's cancel) when each() stops the parse. */
static int done(builder_t *b, const cp_json_t *v)
{
    if (v == NULL || v != b->elem) {
        return 1;
    }
    int rc = b->s->each(b->s->ctx, v);
    b->elem = NULL;
    b->in_elem = 0;
    for (chunk_t *c = b->earena; c != NULL;) { /* keep the first block: no malloc per element */
        chunk_t *p = c->prev;
        if (p == NULL) {
            c->used = 0;
        } else {
            free(c);
        }
        b->earena = p != NULL ? p : c;
        c = p;
    }
    if (rc != 0) {
        b->e->stopped = 1;
        return fail(b, 0, "stopped by the reader");
    }
    return 1;
}

static int on_null(void *ctx)
{
    cp_json_t *v;
    return new_value(ctx, CP_JSON_NULL, &v) == 0 && done(ctx, v);
}

static int on_boolean(void *ctx, int boolean)
{
    cp_json_t *v;
    if (new_value(ctx, CP_JSON_BOOL, &v) != 0) {
        return 0;
    }
    if (v != NULL) {
        v->boolean = boolean != 0;
    }
    return done(ctx, v);
}

static int number_value(builder_t *b, double d, long long i, int whole)
{
    cp_json_t *v;
    if (new_value(b, CP_JSON_NUM, &v) != 0) {
        return 0;
    }
    if (v != NULL) {
        v->num = d;
        v->inum = i;
        v->is_int = whole;
    }
    return done(b, v);
}

static int on_number(void *ctx, const char *s, size_t len)
{
    double d;
    long long i;
    int whole = cp_json_whole(s, len, &i); /* the common case first, without a double's call */
    const char *why = whole ? (d = (double)i, NULL) : cp_json_number(s, len, &d, &i, &whole);
    return why != NULL ? fail(ctx, 0, why) : number_value(ctx, d, i, whole);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    builder_t *b = ctx;
    cp_json_t *v;
    if (!check_string(b, s, len) || new_value(b, CP_JSON_STR, &v) != 0) {
        return 0;
    }
    if (v != NULL && (v->str = arena_str(b, s, len)) == NULL) {
        return fail(b, 0, "out of memory");
    }
    return done(b, v);
}

static int kept_name(const builder_t *b, const char *key)
{
    if (b->depth != 1 || b->keep == NULL) {
        return 1;
    }
    if (b->s != NULL && b->s->member != NULL && !strcmp(b->s->member, key)) {
        return 1;
    }
    for (const char *const *k = b->keep; *k != NULL; k++) {
        if (!strcmp(*k, key)) {
            return 1;
        }
    }
    return 0;
}

/* The stream's name that s[0..len) is, or NULL. */
static const char *known_name(const builder_t *b, const unsigned char *s, size_t len)
{
    for (const char *const *k = b->s != NULL && b->s->names != NULL && len > 0 ? b->s->names : NULL;
         k != NULL && *k != NULL; k++) {
        if ((*k)[0] == (char)s[0] && strnlen(*k, len + 1) == len && !memcmp(*k, s, len)) {
            return *k;
        }
    }
    return NULL;
}

static int on_map_key(void *ctx, const unsigned char *s, size_t len)
{
    builder_t *b = ctx;
    frame_t *f = &b->fr[b->depth];
    cp_strset_t *names = f->names;
    size_t at = f->matched;
    int added = 1;
    long id = (long)at;
    int matched = f->shaped && cp_json_name_is(names, at, s, len);
    f->nkeys++;
    if (matched) {
        f->matched++; /* the last object's next name (checked then): none before it is alike */
    } else {
        if (!check_string(b, s, len)) {
            return 0;
        }
        if (f->shaped) { /* from here, each name against this object's own */
            f->shaped = 0;
            cp_strset_truncate(names, at);
        }
        id = cp_strset_put(names, (const char *)s, len, &added);
        if (f->known != NULL && id >= 0 && id < KNOWN) { /* each name put: read while matched */
            f->known->name[id] = known_name(b, s, len);
        }
    }
    if (id < 0) {
        return fail(b, 0, "out of memory");
    }
    if (!added) {
        return fail(b, 0, "a duplicate member name");
    }
    /* in a streamed element with names given, only members of those names are kept */
    int filter = b->in_elem && b->s->names != NULL;
    const char *known = f->v == NULL || !filter          ? NULL
                        : f->known != NULL && id < KNOWN ? f->known->name[id]
                                                         : known_name(b, s, len);
    f->keep_next =
        f->v != NULL && (filter ? known != NULL : kept_name(b, cp_strset_key(names, id)));
    if (f->keep_next) {
        if ((f->key = known != NULL ? (char *)known : arena_str(b, s, len)) == NULL) {
            return fail(b, 0, "out of memory");
        }
        f->v->keybits |= cp_json_keybit(f->key);
    }
    return 1;
}

static int open_container(builder_t *b, cp_json_type_t t)
{
    cp_json_t *v;
    if (b->depth >= CP_JSON_MAX_DEPTH) {
        return fail(b, 0, "nested too deeply");
    }
    if (new_value(b, t, &v) != 0) {
        return 0;
    }
    const char *key = b->depth == 1 && v != NULL ? v->name : NULL; /* the member it is of */
    size_t place = b->depth > 0 ? b->fr[b->depth].nkeys : 0;       /* 1 + the member it is of */
    frame_t *f = &b->fr[++b->depth];
    memset(f, 0, sizeof(*f));
    f->v = v;
    if (b->s != NULL && b->s->each != NULL && v != NULL && t == CP_JSON_ARR && !b->in_elem) {
        f->stream = b->s->member == NULL
                        ? b->depth == 1 && !b->s->many
                        : b->depth == 2 && key != NULL && !strcmp(key, b->s->member);
    }
    /* the root's elements, where only some members are kept, are not */
    f->keep_next = v != NULL && (b->depth > 1 || b->keep == NULL || f->stream);
    if (t == CP_JSON_OBJ) { /* a large set is given back, not kept to compare with */
        int k = place == 0 || place >= SHAPES ? SHAPES - 1 : (int)place - 1;
        f->names = &b->names[b->depth][k];
        f->known = b->depth < KNOWN_DEPTH ? &b->known[b->depth][k] : NULL;
        f->shaped = f->names->cap <= 1024 && f->names->buf_room <= 65536;
        if (!f->shaped) {
            cp_strset_clear(f->names);
        }
    }
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, CP_JSON_OBJ);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, CP_JSON_ARR);
}

/* The container closes: its kids (and names) as arrays. */
static int close_container(void *ctx)
{
    builder_t *b = ctx;
    frame_t *f = &b->fr[b->depth--];
    cp_json_t *v = f->v;
    if (v == NULL || v->n == 0) {
        return done(b, v);
    }
    if (v->n > SIZE_MAX / sizeof(*v->kids) ||
        (v->kids = arena_alloc(b, v->n * sizeof(*v->kids))) == NULL ||
        (v->type == CP_JSON_OBJ && (v->keys = arena_alloc(b, v->n * sizeof(*v->keys))) == NULL)) {
        return fail(b, 0, "out of memory");
    }
    size_t i = 0;
    for (cp_json_t *k = f->first; k != NULL; k = k->next, i++) {
        v->kids[i] = k;
        if (v->keys != NULL) {
            v->keys[i] = k->name;
        }
    }
    return done(b, v);
}

static const yajl_callbacks callbacks = {
    on_null,      on_boolean, NULL /* integer */, NULL /* double */, on_number,       on_string,
    on_start_map, on_map_key, close_container,    on_start_array,    close_container,
};

/* yajl's own error (the grammar) in the reader's words. */
static void grammar_error(builder_t *b)
{
    unsigned char *y = yajl_get_error(b->h, 0, (const unsigned char *)b->text, b->len);
    const char *what = cp_json_grammar_words(y != NULL ? (const char *)y : "");
    fail(b, 0, what);
    if (y != NULL) {
        yajl_free_error(b->h, y);
    }
}

static void builder_free(builder_t *b)
{
    for (int d = 0; d <= CP_JSON_MAX_DEPTH; d++) {
        for (int k = 0; k < SHAPES; k++) {
            cp_strset_free(&b->names[d][k]);
        }
    }
    if (b->h != NULL) {
        yajl_free(b->h);
    }
}

/* A builder for opts (and s, where streaming): NULL with the error in *e. */
static builder_t *builder_new(const cp_json_opts_t *opts, const cp_json_stream_t *s,
                              cp_json_error_t *e)
{
    builder_t *b = calloc(1, sizeof(*b));
    memset(e, 0, sizeof(*e));
    if (b == NULL) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        return NULL;
    }
    *b = (builder_t){.line = 1, .e = e, .s = s};
    b->keep = opts != NULL ? opts->keep : NULL;
    b->max_values = opts != NULL && opts->max_values > 0 ? opts->max_values : CP_JSON_MAX_VALUES;
    b->h = yajl_alloc(&callbacks, NULL, b);
    if (b->h == NULL || !yajl_config(b->h, yajl_dont_validate_strings, 1) ||
        (s != NULL && s->many && !yajl_config(b->h, yajl_allow_multiple_values, 1))) {
        fail(b, 0, "out of memory");
    }
    return b;
}

/* Parse the next piece of the text (len 0: the end); 0, or -1 after the error. */
static int feed(builder_t *b, const char *text, size_t len)
{
    b->text = text;
    b->len = len;
    b->base = 0;
    const char *nl = memchr(text, '\n', len);
    b->nl = nl != NULL ? (size_t)(nl - text) : len;
    yajl_status st = yajl_status_ok;
    if (len > 0) {
        st = yajl_parse(b->h, (const unsigned char *)text, len);
    } else {
        st = yajl_complete_parse(b->h); /* reads an empty buffer */
    }
    if (st == yajl_status_error) {
        grammar_error(b);
    }
    return b->e->msg[0] == '\0' ? 0 : -1;
}

/* The builder's root (NULL after an error), the builder gone. */
static cp_json_t *builder_end(builder_t *b)
{
    cp_json_t *root = b->e->msg[0] == '\0' ? b->root : NULL;
    if (root != NULL) {
        root->arena = b->arena;
    } else {
        for (chunk_t *c = b->arena, *p; c != NULL; c = p) {
            p = c->prev;
            free(c);
        }
    }
    for (chunk_t *c = b->earena, *p; c != NULL; c = p) {
        p = c->prev;
        free(c);
    }
    builder_free(b);
    free(b);
    return root;
}

cp_json_t *cp_json_parse(const char *text, size_t len, const cp_json_opts_t *opts,
                         cp_json_error_t *e)
{
    builder_t *b = builder_new(opts, NULL, e);
    if (b == NULL) {
        return NULL;
    }
    if (e->msg[0] == '\0' && feed(b, text, len) == 0) {
        feed(b, text + len, 0);
    }
    return builder_end(b);
}

int cp_json_read_fd(int fd, const cp_json_opts_t *opts, const cp_json_stream_t *s, cp_json_t **root,
                    cp_json_error_t *e)
{
    enum { PIECE = 1 << 18 }; /* 256 KiB: yajl_parse called less, and the buffer in L2 */
    builder_t *b = builder_new(opts, s, e);
    char *buf = malloc(PIECE);
    *root = NULL;
    if (b == NULL || buf == NULL) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        free(buf);
        return b != NULL ? (builder_end(b), -1) : -1;
    }
    int rc = e->msg[0] == '\0' ? 0 : -1;
    while (rc == 0) {
        ssize_t n = read(fd, buf, PIECE);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            snprintf(e->msg, sizeof(e->msg), "cannot read it: %s", strerror(errno));
            e->line = b->line;
            rc = -1;
        } else if (memchr(buf, '\0', (size_t)n) != NULL) {
            snprintf(e->msg, sizeof(e->msg), "a NUL byte: not a text file");
            e->line = b->line;
            rc = -1;
        } else {
            rc = feed(b, buf, (size_t)n);
            if (n == 0) {
                break;
            }
        }
    }
    free(buf);
    *root = builder_end(b);
    return rc == 0 && e->msg[0] == '\0' ? 0 : -1;
}

void cp_json_free(cp_json_t *root)
{
    for (chunk_t *c = root != NULL ? root->arena : NULL, *p; c != NULL; c = p) {
        p = c->prev;
        free(c);
    }
}
