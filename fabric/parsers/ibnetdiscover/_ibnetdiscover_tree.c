/*
 * Compiled topology.conf writer: ibnetdiscover's plain output -> Slurm's topology.conf
 * (topology/tree), in one call, for the usual case.
 *
 * tree_conf(text, widths, speeds) returns exactly what
 *     fabric.topology.slurm.tree_conf(fabric.parsers.ibnetdiscover.parse(text))
 * returns, or None to decline: then the caller runs that Python path (the reference), which
 * gives the same text or names the problem. It declines every text the bulk path
 * (ibnetdiscover.fast._parse_fast) declines (outside the scanner's grammar, no node record, a
 * capture cut off, a repeated record, a port line naming a node without one, S- ids that are
 * not switches, one-sided switch-to-switch lines) and, to stay small, some it accepts: node ids
 * that are not "X-" + 16 lower-case hex digits, switch names that compare equal in natural order
 * ("leaf1" and "leaf01") or that Slurm cannot take, host or switch numbers of more than 18
 * digits, and fabrics the Python path refuses (no host on a switch).
 *
 * The steps mirror the Python ones, named after them: the line grammar (_ibnetdiscover_lines.h,
 * shared with the scanner), _fast_nodes / _ca (hosts), _switch_blocks, _whole, _switch_names,
 * slurm._slurm_tree (natural_key ranks, _host_leaves, _rail_leaves, _levels, uppers,
 * _prune_pass_through_tops, _merge_same_children), hostlist.compress, slurm._comment and
 * slurm.tree_conf. tests/unit/test_ibnetdiscover_tree.py checks both give the same text on every
 * fixture, on the benchmark's fabrics and on random mutations (or that this one declines).
 */
#include "_ibnetdiscover_lines.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct {
    const char *p;
    size_t n;
} span_t;

/* ---------------------------------------------------------------- buffers and hash tables */

typedef struct {
    char *p;
    size_t n, cap;
} buf_t;

static int buf_put(buf_t *b, const char *s, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

static int buf_str(buf_t *b, const char *s) { return buf_put(b, s, strlen(s)); }

static int buf_span(buf_t *b, span_t s) { return buf_put(b, s.p, s.n); }

/* An int32 vector. */
typedef struct {
    int32_t *v;
    size_t n, cap;
} vec_t;

static int vec_push(vec_t *v, int32_t x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        int32_t *p = realloc(v->v, cap * sizeof *p);
        if (p == NULL) return -1;
        v->v = p;
        v->cap = cap;
    }
    v->v[v->n++] = x;
    return 0;
}

static uint64_t mix64(uint64_t x) { /* splitmix64's finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash_bytes(uint64_t h, const char *p, size_t n) { /* FNV-1a */
    h ^= 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
    return mix64(h ^ n);
}

/* Open addressing over entry numbers (int32, -1 = empty); the caller hashes and compares. */
typedef struct {
    int32_t *slot;
    size_t mask;
} table_t;

static int table_init(table_t *t, size_t entries) {
    size_t size = 16;
    while (size < 2 * entries + 2) size *= 2;
    t->slot = malloc(size * sizeof *t->slot);
    if (t->slot == NULL) return -1;
    memset(t->slot, 0xff, size * sizeof *t->slot);
    t->mask = size - 1;
    return 0;
}

typedef int (*eq_fn)(const void *ctx, int32_t entry, const void *key);

/* The slot holding the entry equal to `key`, or the empty slot where it belongs. */
static int32_t *table_find(table_t *t, uint64_t h, eq_fn eq, const void *ctx, const void *key) {
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        if (t->slot[i] < 0 || eq(ctx, t->slot[i], key)) return &t->slot[i];
    }
}

static int span_eq(span_t a, span_t b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

static int spans_eq(const void *ctx, int32_t entry, const void *key) {
    return span_eq(((const span_t *)ctx)[entry], *(const span_t *)key);
}

/* Python's str.isspace() for ASCII: what str.split() and str.strip() split at and strip. */
static int is_pyspace(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

static int is_word(char c) {
    return is_digit(c) || is_upper(c) || (c >= 'a' && c <= 'z') || c == '_';
}

/* ---------------------------------------------------------------- hostlist.compress */

/* A name as hostlist._NUMBERED splits it: prefix, its last run of digits, suffix. */
typedef struct {
    span_t prefix, suffix;
    size_t digits; /* 0: no number */
    size_t width;  /* hostlist._width */
    uint64_t value;
} numbered_t;

typedef struct {
    span_t prefix, suffix;
    size_t width;
} group_key_t;

static int group_eq(const void *ctx, int32_t entry, const void *key) {
    const group_key_t *a = &((const group_key_t *)ctx)[entry], *b = key;
    return a->width == b->width && span_eq(a->prefix, b->prefix) && span_eq(a->suffix, b->suffix);
}

static uint64_t group_hash(const group_key_t *k) {
    return hash_bytes(hash_bytes(k->width, k->prefix.p, k->prefix.n), k->suffix.p, k->suffix.n);
}

/* Split `s`; 0 when its number has more than 18 significant digits (declined), else 1. */
static int numbered(span_t s, numbered_t *out) {
    size_t e = s.n;
    while (e > 0 && !is_digit(s.p[e - 1])) e--;
    memset(out, 0, sizeof *out);
    if (e == 0) return 1;
    size_t b = e;
    while (b > 0 && is_digit(s.p[b - 1])) b--;
    out->prefix = (span_t){s.p, b};
    out->suffix = (span_t){s.p + e, s.n - e};
    out->digits = e - b;
    out->width = (out->digits > 1 && s.p[b] == '0') ? out->digits : 0;
    size_t z = b;
    while (z < e - 1 && s.p[z] == '0') z++;
    if (e - z > 18) return 0;
    for (size_t i = z; i < e; i++) out->value = out->value * 10 + (uint64_t)(s.p[i] - '0');
    return 1;
}

static int put_number(buf_t *b, uint64_t v, size_t width) { /* str(v).zfill(width) */
    char digits[24];
    size_t n = 0;
    do {
        digits[sizeof digits - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = n; i < width; i++)
        if (buf_put(b, "0", 1) < 0) return -1;
    return buf_put(b, digits + sizeof digits - n, n);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* hostlist.compress(items) appended to `out`: 1, 0 to decline, -1 out of memory. */
static int compress(const span_t *items, size_t n, buf_t *out) {
    int rc = -1;
    numbered_t *parsed = calloc(n ? n : 1, sizeof *parsed);
    group_key_t *keys = calloc(n ? n : 1, sizeof *keys);
    vec_t *members = calloc(n ? n : 1, sizeof *members);
    int32_t *order = malloc((n ? n : 1) * sizeof *order); /* >= 0: group; < 0: -1 - plain item */
    uint64_t *values = malloc((n ? n : 1) * sizeof *values);
    table_t padded = {0}, groups = {0}, plains = {0};
    size_t ngroups = 0, norder = 0, npadded = 0;
    group_key_t *padkeys = calloc(n ? n : 1, sizeof *padkeys);
    if (!parsed || !keys || !members || !order || !values || !padkeys || table_init(&padded, n) < 0
        || table_init(&groups, n) < 0 || table_init(&plains, n) < 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        if (!numbered(items[i], &parsed[i])) {
            rc = 0;
            goto done;
        }
        if (parsed[i].width) {
            group_key_t k = {parsed[i].prefix, parsed[i].suffix, parsed[i].width};
            int32_t *slot = table_find(&padded, group_hash(&k), group_eq, padkeys, &k);
            if (*slot < 0) {
                padkeys[npadded] = k;
                *slot = (int32_t)npadded++;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        const numbered_t *it = &parsed[i];
        if (!it->digits) {
            int32_t *slot = table_find(&plains, hash_bytes(0, items[i].p, items[i].n), spans_eq, items,
                                       &items[i]);
            if (*slot < 0) {
                *slot = (int32_t)i;
                order[norder++] = -1 - (int32_t)i;
            }
            continue;
        }
        group_key_t k = {it->prefix, it->suffix, it->width};
        if (k.width == 0) {
            group_key_t wide = {it->prefix, it->suffix, it->digits};
            if (*table_find(&padded, group_hash(&wide), group_eq, padkeys, &wide) >= 0) k = wide;
        }
        int32_t *slot = table_find(&groups, group_hash(&k), group_eq, keys, &k);
        if (*slot < 0) {
            keys[ngroups] = k;
            *slot = (int32_t)ngroups;
            order[norder++] = (int32_t)ngroups++;
        }
        if (vec_push(&members[*slot], (int32_t)i) < 0) goto done;
    }
    for (size_t o = 0; o < norder; o++) {
        if (o && buf_put(out, ",", 1) < 0) goto done;
        if (order[o] < 0) {
            if (buf_span(out, items[-1 - order[o]]) < 0) goto done;
            continue;
        }
        const group_key_t *k = &keys[order[o]];
        const vec_t *m = &members[order[o]];
        size_t nv = 0;
        for (size_t j = 0; j < m->n; j++) values[nv++] = parsed[m->v[j]].value;
        qsort(values, nv, sizeof *values, cmp_u64);
        size_t u = 1;
        for (size_t j = 1; j < nv; j++)
            if (values[j] != values[u - 1]) values[u++] = values[j];
        if (buf_span(out, k->prefix) < 0 || (u > 1 && buf_put(out, "[", 1) < 0)) goto done;
        for (size_t j = 0; j < u;) {
            size_t r = j;
            while (r + 1 < u && values[r + 1] == values[r] + 1) r++;
            if ((j && buf_put(out, ",", 1) < 0) || put_number(out, values[j], k->width) < 0) goto done;
            if (r > j && (buf_put(out, "-", 1) < 0 || put_number(out, values[r], k->width) < 0)) goto done;
            j = r + 1;
        }
        if ((u > 1 && buf_put(out, "]", 1) < 0) || buf_span(out, k->suffix) < 0) goto done;
    }
    rc = 1;
done:
    if (members)
        for (size_t i = 0; i < n; i++) free(members[i].v);
    free(parsed);
    free(keys);
    free(members);
    free(order);
    free(values);
    free(padkeys);
    free(padded.slot);
    free(groups.slot);
    free(plains.slot);
    return rc;
}

/* slurm._comment(text): '#' lines of about 96 characters, split after commas and spaces. */
static int comment(const char *text, size_t n, buf_t *out) {
    const size_t width = 96;
    size_t line_start = out->n;
    if (buf_put(out, "#", 1) < 0) return -1;
    size_t w = 0;
    while (w <= n) {
        size_t e = w;
        while (e < n && text[e] != ',' && text[e] != ' ') e++;
        if (e < n) e++; /* the word keeps the comma or space it ends at */
        size_t len = out->n - line_start;
        if (len + (e - w) > width && !(len == 1)) {
            while (out->n > line_start && out->p[out->n - 1] == ' ') out->n--;
            if (buf_put(out, "\n#  ", 4) < 0) return -1;
            line_start = out->n - 3;
        }
        if (out->p[out->n - 1] == '#' && buf_put(out, " ", 1) < 0) return -1;
        if (buf_put(out, text + w, e - w) < 0) return -1;
        if (e == n) { /* re.split gives a last, empty word after a trailing comma or space */
            if (n > 0 && (text[n - 1] == ',' || text[n - 1] == ' ') && w != n) {
                w = n;
                continue;
            }
            break;
        }
        w = e;
    }
    while (out->n > line_start && out->p[out->n - 1] == ' ') out->n--;
    return buf_put(out, "\n", 1);
}

/* ---------------------------------------------------------------- the fabric */

enum { KIND_SWITCH, KIND_CA, KIND_RT };

typedef struct {
    size_t nodes, ports, switches;
    uint64_t *guid;
    char *letter, *kind;
    span_t *desc, *host, *name;
    size_t *start;      /* offset of each node header line */
    int32_t *first;     /* each node's first port line */
    int32_t *nports;    /* its port lines */
    int32_t *indeg;     /* port lines naming it */
    uint64_t *rguid;    /* each port line's remote id: GUID and letter */
    char *rletter;
    int32_t *remote;    /* ... resolved to a node */
    char *names;        /* storage of built switch names */
    size_t names_n;
} fabric_t;

static void fabric_free(fabric_t *f) {
    free(f->guid);
    free(f->letter);
    free(f->kind);
    free(f->desc);
    free(f->host);
    free(f->name);
    free(f->start);
    free(f->first);
    free(f->nports);
    free(f->indeg);
    free(f->rguid);
    free(f->rletter);
    free(f->remote);
    free(f->names);
}

/* "X-" + 16 lower-case hex digits -> the GUID and X; 0 for any other spelling (declined). */
static int plain_id(pos_t id, Py_ssize_t n, uint64_t *guid, char *letter) {
    if (n != 18 || !is_upper(id[0]) || id[1] != '-') return 0;
    uint64_t g = 0, bad = 0;
    for (int i = 2; i < 18; i++) {
        unsigned char c = (unsigned char)id[i];
        unsigned d = c <= '9' ? c - (unsigned)'0' : c - (unsigned)'a' + 10; /* huge if neither */
        bad |= (c < '0' || (c > '9' && c < 'a') || d > 15);
        g = (g << 4) | (d & 15);
    }
    if (bad) return 0;
    *guid = g;
    *letter = id[0];
    return 1;
}

/* realloc `*p` to `n` elements of `size` bytes; -1 when out of memory. */
static int resize(void *p, size_t n, size_t size) {
    void *q = realloc(*(void **)p, n * size);
    if (q == NULL) return -1;
    *(void **)p = q;
    return 0;
}

/* Room for `n` nodes and `m` port lines (the arrays grow with the text's records, not its
 * lines: a file of a billion blank lines needs none). */
static int reserve(fabric_t *f, size_t *ncap, size_t *pcap) {
    if (f->nodes == *ncap) {
        size_t n = *ncap ? *ncap * 2 : 1024;
        if (resize(&f->guid, n, sizeof *f->guid) || resize(&f->letter, n, 1) || resize(&f->kind, n, 1)
            || resize(&f->desc, n, sizeof *f->desc) || resize(&f->start, n, sizeof *f->start)
            || resize(&f->first, n, sizeof *f->first) || resize(&f->nports, n, sizeof *f->nports))
            return -1;
        *ncap = n;
    }
    if (f->ports == *pcap) {
        size_t m = *pcap ? *pcap * 2 : 4096;
        if (resize(&f->rguid, m, sizeof *f->rguid) || resize(&f->rletter, m, 1)) return -1;
        *pcap = m;
    }
    return 0;
}

/* The scan: every line in the grammar, every id plain. 1, 0 (declined), -1 (a Python error). */
static int read_lines(fabric_t *f, rates_t *rates, pos_t text, pos_t end) {
    size_t ncap = 0, pcap = 0;
    for (pos_t p = text;;) {
        pos_t e = memchr(p, '\n', (size_t)(end - p));
        if (e == NULL) e = end;
        pos_t id = NULL, np = NULL, desc = NULL;
        Py_ssize_t idn = 0, nn = 0, descn = 0;
        size_t kind = 0;
        int ok;
        if (p < e && *p == '[') ok = port_line(rates, p, e, &id, &idn, 1);
        else if ((kind = header_kind(p, e)) != 0) ok = header_line(p + kind, e, &np, &nn, &id, &idn, &desc, &descn, 1);
        else ok = other_line(p, e, 1);
        if (ok <= 0) return ok;
        if (id != NULL) {
            if (reserve(f, &ncap, &pcap) < 0) {
                PyErr_NoMemory();
                return -1;
            }
            if (f->nodes >= INT32_MAX || f->ports >= INT32_MAX) return 0;
        }
        if (id != NULL && kind) {
            size_t k = f->nodes++;
            if (!plain_id(id, idn, &f->guid[k], &f->letter[k])) return 0;
            f->kind[k] = (char)(kind == 6 ? KIND_SWITCH : *p == 'C' ? KIND_CA : KIND_RT);
            f->desc[k] = (span_t){desc, (size_t)descn};
            f->start[k] = (size_t)(p - text);
            f->first[k] = (int32_t)f->ports;
            f->nports[k] = 0;
        } else if (id != NULL) {
            if (f->nodes == 0) return 0; /* a port line before any node record */
            size_t k = f->ports++;
            if (!plain_id(id, idn, &f->rguid[k], &f->rletter[k])) return 0;
            f->nports[f->nodes - 1]++;
        }
        if (e == end) break;
        p = e + 1;
    }
    return f->nodes > 0;
}

static int guid_eq(const void *ctx, int32_t entry, const void *key) {
    return ((const uint64_t *)ctx)[entry] == *(const uint64_t *)key;
}

/* Every port line's remote node: 1, or 0 (declined) for a repeated record, an id with no record,
 * another spelling of a node's GUID, or S- ids that are not switches (fast._fast_nodes). */
static int resolve(fabric_t *f) {
    table_t t;
    if (table_init(&t, f->nodes) < 0) return -1;
    int rc = 0;
    f->remote = malloc((f->ports ? f->ports : 1) * sizeof *f->remote);
    f->indeg = calloc(f->nodes, sizeof *f->indeg);
    if (f->remote == NULL || f->indeg == NULL) {
        rc = -1;
        goto done;
    }
    for (size_t k = 0; k < f->nodes; k++) {
        if ((f->letter[k] == 'S') != (f->kind[k] == KIND_SWITCH)) goto done;
        f->switches += f->kind[k] == KIND_SWITCH;
        int32_t *slot = table_find(&t, mix64(f->guid[k]), guid_eq, f->guid, &f->guid[k]);
        if (*slot >= 0) goto done;
        *slot = (int32_t)k;
    }
    for (size_t j = 0; j < f->ports; j++) {
        int32_t r = *table_find(&t, mix64(f->rguid[j]), guid_eq, f->guid, &f->rguid[j]);
        if (r < 0 || f->letter[r] != f->rletter[j]) goto done;
        f->remote[j] = r;
        f->indeg[r]++;
    }
    rc = 1;
done:
    free(t.slot);
    return rc;
}

/* fast._whole: the last record of each capture (before each "\n# Topology file" and the end)
 * lists as many port lines as there are port lines naming it. */
static int whole(const fabric_t *f, pos_t text, size_t len) {
    static const char head[] = "\n# Topology file";
    const size_t skip = 3; /* searched from its rare "T", checked back to its newline */
    for (pos_t p = text;;) {
        pos_t q = NULL;
        for (pos_t from = p;;) {
            pos_t t = memmem(from, len - (size_t)(from - text), head + skip, sizeof head - 1 - skip);
            if (t == NULL) break;
            if ((size_t)(t - p) >= skip && memcmp(t - skip, head, skip) == 0) {
                q = t - skip;
                break;
            }
            from = t + 1;
        }
        size_t stop = q == NULL ? len : (size_t)(q - text);
        size_t lo = 0, hi = f->nodes; /* the last header starting before `stop` */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (f->start[mid] < stop) lo = mid + 1;
            else hi = mid;
        }
        if (lo > 0 && f->nports[lo - 1] != f->indeg[lo - 1]) return 0;
        if (q == NULL) return 1;
        p = q + 1;
    }
}

/* _ca: the host of a CA (the first word of its description), or an empty span. */
static span_t ca_host(char kind, span_t d) {
    static const char agg[] = "Aggregation Node";
    span_t none = {d.p, 0};
    if (kind != KIND_CA) return none;
    for (size_t i = 0; i + sizeof agg - 1 <= d.n; i++)
        if (memcmp(d.p + i, agg, sizeof agg - 1) == 0) return none;
    if (d.n > 2 && d.p[0] == 'M' && d.p[1] == 'T' && is_digit(d.p[2])) { /* ^MT\d+\b */
        size_t i = 3;
        while (i < d.n && is_digit(d.p[i])) i++;
        if (i == d.n || !is_word(d.p[i])) return none;
    }
    size_t b = 0;
    while (b < d.n && is_pyspace(d.p[b])) b++;
    size_t e = b;
    while (e < d.n && !is_pyspace(d.p[e])) e++;
    return (span_t){d.p + b, e - b};
}

/* common._MF0 on a description: the name, or 0. */
static int mf0_name(span_t d, span_t *g1, span_t *g2) {
    if (d.n < 4 || memcmp(d.p, "MF0;", 4) != 0) return 0;
    size_t i = 4;
    while (i < d.n && d.p[i] != ':' && d.p[i] != ';') i++;
    if (i == 4 || i == d.n || d.p[i] != ':') return 0;
    *g1 = (span_t){d.p + 4, i - 4};
    pos_t slash = memchr(d.p + i, '/', d.n - i);
    if (slash == NULL) return 0;
    size_t r = (size_t)(slash - d.p); /* the first '/' after the ':' */
    pos_t second = memchr(d.p + r + 1, '/', d.n - r - 1);
    size_t s = second ? (size_t)(second - d.p) : 0;
    if (second && s > r + 1 && s + 2 < d.n + 0 && d.p[s + 1] == 'U') { /* /X/U\d+$ */
        size_t k = s + 2;
        while (k < d.n && is_digit(d.p[k])) k++;
        if (k == d.n && k > s + 2) {
            *g2 = (span_t){d.p + r + 1, s - r - 1};
            return 1;
        }
    }
    if (r + 2 < d.n && d.p[r + 1] == 'U') { /* /U\d+$ */
        size_t k = r + 2;
        while (k < d.n && is_digit(d.p[k])) k++;
        if (k == d.n) {
            *g2 = (span_t){NULL, 0};
            return 1;
        }
    }
    return 0;
}

/* common._switch_names; 0 (declined) for a name Slurm cannot take or an empty one. */
static int switch_names(fabric_t *f) {
    size_t cap = 0;
    for (size_t k = 0; k < f->nodes; k++) cap += f->desc[k].n + 2 * 20;
    f->name = calloc(f->nodes, sizeof *f->name);
    f->names = malloc(cap + 1);
    if (f->name == NULL || f->names == NULL) return -1;
    int32_t *count = calloc(f->nodes, sizeof *count);
    int32_t *first = malloc(f->nodes * sizeof *first);
    table_t t;
    if (count == NULL || first == NULL || table_init(&t, f->switches) < 0) {
        free(count);
        free(first);
        return -1;
    }
    char *out = f->names;
    for (size_t k = 0; k < f->nodes; k++) {
        if (f->kind[k] != KIND_SWITCH) continue;
        span_t d = f->desc[k], g1, g2;
        char *name = out;
        if (mf0_name(d, &g1, &g2)) {
            memcpy(out, g1.p, g1.n);
            out += g1.n;
            if (g2.p != NULL) {
                *out++ = '-';
                memcpy(out, g2.p, g2.n);
                out += g2.n;
            }
        } else {
            size_t b = 0, e = d.n;
            while (b < e && is_pyspace(d.p[b])) b++;
            while (e > b && is_pyspace(d.p[e - 1])) e--;
            if (d.n && memchr(d.p + b, ' ', e - b) == NULL) {
                memcpy(out, d.p + b, e - b);
                out += e - b;
            } else {
                out += sprintf(out, "S-%016llx", (unsigned long long)f->guid[k]);
            }
        }
        f->name[k] = (span_t){name, (size_t)(out - name)};
        int32_t *slot = table_find(&t, hash_bytes(0, name, f->name[k].n), spans_eq, f->name, &f->name[k]);
        if (*slot < 0) *slot = (int32_t)k;
        first[k] = *slot;
        count[*slot]++;
    }
    for (size_t k = 0; k < f->nodes; k++) { /* made unique by GUID */
        if (f->kind[k] != KIND_SWITCH || count[first[k]] == 1) continue;
        char *name = out;
        memcpy(out, f->name[k].p, f->name[k].n);
        out += f->name[k].n;
        out += sprintf(out, "-%016llx", (unsigned long long)f->guid[k]);
        f->name[k] = (span_t){name, (size_t)(out - name)};
    }
    free(count);
    free(first);
    free(t.slot);
    for (size_t k = 0; k < f->nodes; k++) {
        if (f->kind[k] != KIND_SWITCH) continue;
        if (f->name[k].n == 0) return 0;
        for (size_t i = 0; i < f->name[k].n; i++) { /* slurm: [\s=,\[\]#] */
            char c = f->name[k].p[i];
            if (is_pyspace(c) || c == '=' || c == ',' || c == '[' || c == ']' || c == '#') return 0;
        }
    }
    return 1;
}

/* slurm.natural_key order: text runs by code point, digit runs by value. */
static int natural_cmp(span_t a, span_t b) {
    size_t i = 0, j = 0;
    for (;;) {
        size_t i2 = i, j2 = j;
        while (i2 < a.n && !is_digit(a.p[i2])) i2++;
        while (j2 < b.n && !is_digit(b.p[j2])) j2++;
        size_t la = i2 - i, lb = j2 - j;
        int c = memcmp(a.p + i, b.p + j, la < lb ? la : lb);
        if (c) return c < 0 ? -1 : 1;
        if (la != lb) return la < lb ? -1 : 1;
        if (i2 == a.n || j2 == b.n) return (i2 != a.n) - (j2 != b.n);
        size_t i3 = i2, j3 = j2;
        while (i3 < a.n && is_digit(a.p[i3])) i3++;
        while (j3 < b.n && is_digit(b.p[j3])) j3++;
        while (i2 + 1 < i3 && a.p[i2] == '0') i2++;
        while (j2 + 1 < j3 && b.p[j2] == '0') j2++;
        if (i3 - i2 != j3 - j2) return i3 - i2 < j3 - j2 ? -1 : 1;
        c = memcmp(a.p + i2, b.p + j2, i3 - i2);
        if (c) return c < 0 ? -1 : 1;
        i = i3;
        j = j3;
    }
}

/* What the sorts compare by (qsort_r's context). */
typedef struct {
    const fabric_t *f;
    const int32_t *rank, *level;
} order_t;

static int by_name(const void *a, const void *b, void *ctx) {
    const fabric_t *f = ((const order_t *)ctx)->f;
    return natural_cmp(f->name[*(const int32_t *)a], f->name[*(const int32_t *)b]);
}

static int by_rank(const void *a, const void *b, void *ctx) {
    const int32_t *rank = ((const order_t *)ctx)->rank;
    return rank[*(const int32_t *)a] - rank[*(const int32_t *)b];
}

static int by_level_rank(const void *a, const void *b, void *ctx) {
    const order_t *o = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (o->level[x] != o->level[y]) return o->level[x] < o->level[y] ? -1 : 1;
    return o->rank[x] - o->rank[y];
}

/* ---------------------------------------------------------------- the Slurm tree */

typedef struct {
    int32_t *kids;
    size_t n;
} kids_t;

static int kids_eq(const void *ctx, int32_t entry, const void *key) {
    const kids_t *a = &((const kids_t *)ctx)[entry], *b = key;
    return a->n == b->n && memcmp(a->kids, b->kids, a->n * sizeof *a->kids) == 0;
}

static uint64_t kids_hash(const kids_t *k) {
    return hash_bytes(k->n, (const char *)k->kids, k->n * sizeof *k->kids);
}

/* Sort `v` by rank and drop repeats. */
static size_t rank_unique(order_t *o, int32_t *v, size_t n) {
    qsort_r(v, n, sizeof *v, by_rank, o);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || v[i] != v[u - 1]) v[u++] = v[i];
    return u;
}

/* slurm._prune_pass_through_tops over the uppers still `alive`. */
static void prune(size_t nodes, kids_t *up, char *alive, char *listed) {
    for (;;) {
        memset(listed, 0, nodes);
        for (size_t g = 0; g < nodes; g++)
            if (alive[g])
                for (size_t i = 0; i < up[g].n; i++) listed[up[g].kids[i]] = 1;
        int any = 0;
        for (size_t g = 0; g < nodes; g++) {
            if (alive[g] && !listed[g] && up[g].n == 1 && alive[up[g].kids[0]]) {
                alive[g] = 2; /* dropped below, all at once */
                any = 1;
            }
        }
        if (!any) return;
        for (size_t g = 0; g < nodes; g++)
            if (alive[g] == 2) alive[g] = 0;
    }
}

typedef struct {
    const fabric_t *f;
    order_t by; /* the fabric, ranks and levels, for the sorts */
    int32_t *rank, *level, *host_leaf, *rail_of, *ca_host, *adj_off, *adj, *kept, *order;
    int32_t *leaf_order, *host_off, *host_ids, *switch_list;
    span_t *hosts, *scratch;
    kids_t *up;
    char *alive, *listed, *is_leaf;
    size_t nhosts, nleaves, norder;
} tree_t;

static void tree_free(tree_t *t) {
    free(t->rank);
    free(t->level);
    free(t->host_leaf);
    free(t->rail_of);
    free(t->ca_host);
    free(t->adj_off);
    free(t->adj);
    free(t->kept);
    free(t->order);
    free(t->leaf_order);
    free(t->host_off);
    free(t->host_ids);
    free(t->switch_list);
    free(t->hosts);
    free(t->scratch);
    if (t->up)
        for (size_t g = 0; g < t->f->nodes; g++) free(t->up[g].kids);
    free(t->up);
    free(t->alive);
    free(t->listed);
    free(t->is_leaf);
}

/* Ranks, switch adjacency (checked two-sided: fast._switch_blocks), host placement. */
static int place(tree_t *t) {
    const fabric_t *f = t->f;
    size_t N = f->nodes;
    t->rank = malloc(N * sizeof *t->rank);
    t->switch_list = malloc((f->switches ? f->switches : 1) * sizeof *t->switch_list);
    t->adj_off = malloc((N + 1) * sizeof *t->adj_off);
    t->adj = malloc((f->ports ? f->ports : 1) * sizeof *t->adj);
    t->ca_host = malloc(N * sizeof *t->ca_host);
    t->host_leaf = malloc(N * sizeof *t->host_leaf);
    t->hosts = malloc(N * sizeof *t->hosts);
    t->rail_of = malloc(N * sizeof *t->rail_of);
    t->is_leaf = calloc(N, 1);
    if (!t->rank || !t->switch_list || !t->adj_off || !t->adj || !t->ca_host || !t->host_leaf || !t->hosts
        || !t->rail_of || !t->is_leaf)
        return -1;
    size_t ns = 0;
    for (size_t k = 0; k < N; k++)
        if (f->kind[k] == KIND_SWITCH) t->switch_list[ns++] = (int32_t)k;
    t->by.f = f;
    qsort_r(t->switch_list, ns, sizeof *t->switch_list, by_name, &t->by);
    for (size_t i = 0; i < ns; i++) {
        if (i && natural_cmp(f->name[t->switch_list[i - 1]], f->name[t->switch_list[i]]) == 0) return 0;
        t->rank[t->switch_list[i]] = (int32_t)i;
    }
    t->by.rank = t->rank;
    size_t na = 0;
    for (size_t k = 0; k < N; k++) {
        t->adj_off[k] = (int32_t)na;
        if (f->kind[k] != KIND_SWITCH) continue;
        size_t s0 = na;
        for (int32_t j = f->first[k]; j < f->first[k] + f->nports[k]; j++) {
            int32_t r = f->remote[j];
            if (f->kind[r] == KIND_SWITCH && r != (int32_t)k) t->adj[na++] = r;
        }
        na = s0 + rank_unique(&t->by, t->adj + s0, na - s0);
    }
    t->adj_off[N] = (int32_t)na;
    for (size_t k = 0; k < N; k++) { /* every switch lists each switch that lists it */
        for (int32_t i = t->adj_off[k]; i < t->adj_off[k + 1]; i++) {
            int32_t b = t->adj[i];
            int32_t lo = t->adj_off[b], hi = t->adj_off[b + 1];
            while (lo < hi) {
                int32_t mid = (lo + hi) / 2;
                if (t->rank[t->adj[mid]] < t->rank[k]) lo = mid + 1;
                else hi = mid;
            }
            if (lo == t->adj_off[b + 1] || t->adj[lo] != (int32_t)k) return 0;
        }
    }
    table_t ht;
    if (table_init(&ht, N) < 0) return -1;
    for (size_t k = 0; k < N; k++) t->ca_host[k] = -2; /* -2: not looked up yet; -1: no host */
    for (size_t k = 0; k < N; k++) { /* slurm._host_leaves */
        if (f->kind[k] != KIND_SWITCH) continue;
        for (int32_t j = f->first[k]; j < f->first[k] + f->nports[k]; j++) {
            int32_t r = f->remote[j];
            if (f->kind[r] == KIND_SWITCH) continue;
            if (t->ca_host[r] == -2) {
                span_t h = ca_host(f->kind[r], f->desc[r]);
                if (h.n == 0) {
                    t->ca_host[r] = -1;
                } else {
                    t->hosts[t->nhosts] = h;
                    int32_t *slot = table_find(&ht, hash_bytes(0, h.p, h.n), spans_eq, t->hosts, &h);
                    if (*slot < 0) {
                        *slot = (int32_t)t->nhosts;
                        t->host_leaf[t->nhosts++] = (int32_t)k;
                    }
                    t->ca_host[r] = *slot;
                }
            }
            int32_t h = t->ca_host[r];
            if (h >= 0 && t->rank[k] < t->rank[t->host_leaf[h]]) t->host_leaf[h] = (int32_t)k;
        }
    }
    free(ht.slot);
    if (t->nhosts == 0) return 0; /* slurm raises GraphError: no switch cabled to a host */
    for (size_t h = 0; h < t->nhosts; h++) t->is_leaf[t->host_leaf[h]] = 1;
    for (size_t k = 0; k < N; k++) { /* slurm._rail_leaves */
        t->rail_of[k] = -1;
        if (f->kind[k] != KIND_SWITCH || t->is_leaf[k]) continue;
        for (int32_t j = f->first[k]; j < f->first[k] + f->nports[k]; j++) {
            int32_t r = f->remote[j];
            if (f->kind[r] != KIND_SWITCH && t->ca_host[r] >= 0) {
                t->rail_of[k] = t->host_leaf[t->ca_host[r]];
                break;
            }
        }
    }
    return 1;
}

/* Levels by BFS, uppers with rail leaves folded, pruned, merged, pruned (slurm._slurm_tree). */
static int build_tree(tree_t *t) {
    const fabric_t *f = t->f;
    size_t N = f->nodes;
    t->level = malloc(N * sizeof *t->level);
    t->up = calloc(N, sizeof *t->up);
    t->alive = calloc(N, 1);
    t->listed = calloc(N, 1);
    t->kept = malloc(N * sizeof *t->kept);
    t->order = malloc(N * sizeof *t->order);
    int32_t *queue = malloc(N * sizeof *queue);
    if (!t->level || !t->up || !t->alive || !t->listed || !t->kept || !t->order || !queue) {
        free(queue);
        return -1;
    }
    size_t qh = 0, qt = 0;
    for (size_t k = 0; k < N; k++) {
        t->level[k] = -1;
        t->kept[k] = -1;
        if (t->is_leaf[k] || t->rail_of[k] >= 0) {
            t->level[k] = 0;
            queue[qt++] = (int32_t)k;
        }
    }
    while (qh < qt) {
        int32_t g = queue[qh++];
        for (int32_t i = t->adj_off[g]; i < t->adj_off[g + 1]; i++) {
            if (t->level[t->adj[i]] < 0) {
                t->level[t->adj[i]] = t->level[g] + 1;
                queue[qt++] = t->adj[i];
            }
        }
    }
    free(queue);
    t->by.level = t->level;
    for (size_t g = 0; g < N; g++) {
        if (t->level[g] <= 0) continue;
        size_t n = 0;
        int32_t *kids = malloc((size_t)(t->adj_off[g + 1] - t->adj_off[g]) * sizeof *kids);
        if (kids == NULL) return -1;
        for (int32_t i = t->adj_off[g]; i < t->adj_off[g + 1]; i++) {
            int32_t b = t->adj[i];
            if (t->level[b] == t->level[g] - 1) kids[n++] = t->rail_of[b] >= 0 ? t->rail_of[b] : b;
        }
        t->up[g] = (kids_t){kids, rank_unique(&t->by, kids, n)};
        t->alive[g] = 1;
    }
    prune(N, t->up, t->alive, t->listed);
    for (size_t g = 0; g < N; g++)
        if (t->alive[g]) t->order[t->norder++] = (int32_t)g;
    qsort_r(t->order, t->norder, sizeof *t->order, by_level_rank, &t->by);
    table_t seen;
    if (table_init(&seen, t->norder) < 0) return -1;
    for (size_t o = 0; o < t->norder; o++) { /* slurm._merge_same_children */
        int32_t g = t->order[o];
        kids_t *k = &t->up[g];
        for (size_t i = 0; i < k->n; i++)
            if (t->kept[k->kids[i]] >= 0) k->kids[i] = t->kept[k->kids[i]];
        k->n = rank_unique(&t->by, k->kids, k->n);
        int32_t *slot = table_find(&seen, kids_hash(k), kids_eq, t->up, k);
        if (*slot < 0) {
            *slot = g;
        } else {
            t->kept[g] = *slot;
            t->alive[g] = 0;
        }
    }
    free(seen.slot);
    prune(N, t->up, t->alive, t->listed);
    return 1;
}

/* slurm.tree_conf's text. */
static int write_conf(tree_t *t, buf_t *out) {
    const fabric_t *f = t->f;
    size_t N = f->nodes;
    int rc = -1;
    buf_t text = {0};
    t->leaf_order = malloc(N * sizeof *t->leaf_order);
    t->host_off = calloc(N + 1, sizeof *t->host_off);
    t->host_ids = malloc((t->nhosts ? t->nhosts : 1) * sizeof *t->host_ids);
    t->scratch = malloc((N + t->nhosts + 1) * sizeof *t->scratch);
    int32_t *fill = malloc((N + 1) * sizeof *fill);
    int32_t *written = malloc((t->norder ? t->norder : 1) * sizeof *written);
    int32_t *group_off = calloc(N + 1, sizeof *group_off), *group = malloc((t->norder ? t->norder : 1) * sizeof *group);
    if (!t->leaf_order || !t->host_off || !t->host_ids || !t->scratch || !fill || !written || !group_off || !group)
        goto done;
    for (size_t k = 0; k < N; k++)
        if (t->is_leaf[k]) t->leaf_order[t->nleaves++] = (int32_t)k;
    qsort_r(t->leaf_order, t->nleaves, sizeof *t->leaf_order, by_rank, &t->by);
    for (size_t h = 0; h < t->nhosts; h++) t->host_off[t->host_leaf[h] + 1]++;
    for (size_t k = 0; k < N; k++) t->host_off[k + 1] += t->host_off[k];
    memcpy(fill, t->host_off, (N + 1) * sizeof *fill);
    for (size_t h = 0; h < t->nhosts; h++) t->host_ids[fill[t->host_leaf[h]]++] = (int32_t)h;
    /* merged groups: each head's members, in merge order (slurm._merge_same_children) */
    for (size_t o = 0; o < t->norder; o++)
        if (t->kept[t->order[o]] >= 0) group_off[t->kept[t->order[o]] + 1]++;
    for (size_t k = 0; k < N; k++) group_off[k + 1] += group_off[k];
    memcpy(fill, group_off, (N + 1) * sizeof *fill);
    for (size_t o = 0; o < t->norder; o++)
        if (t->kept[t->order[o]] >= 0) group[fill[t->kept[t->order[o]]]++] = t->order[o];
    /* the uppers as written: alive, by (level, rank); their kids are by rank */
    size_t nu = 0;
    for (size_t o = 0; o < t->norder; o++)
        if (t->alive[t->order[o]] && t->up[t->order[o]].n) written[nu++] = t->order[o];
    memset(t->listed, 0, N);
    for (size_t o = 0; o < nu; o++)
        for (size_t i = 0; i < t->up[written[o]].n; i++) t->listed[t->up[written[o]].kids[i]] = 1;
    if (buf_str(out, "# topology.conf (topology/tree) written by railyard; hosts under their rail-0 leaf\n") < 0)
        goto done;
    size_t ntops = 0;
    for (size_t i = 0; i < t->nleaves + nu; i++) {
        int32_t g = i < t->nleaves ? t->leaf_order[i] : written[i - t->nleaves];
        if (!t->listed[g]) t->scratch[ntops++] = f->name[g];
    }
    if (ntops > 1) {
        char count[32];
        snprintf(count, sizeof count, "%zu", ntops);
        if (buf_str(&text, "this fabric has ") < 0 || buf_str(&text, count) < 0
            || buf_str(&text, " disjoint parts (pods or planes) that no switch joins, topped by ") < 0)
            goto done;
        int c = compress(t->scratch, ntops, &text);
        if (c <= 0) {
            rc = c;
            goto done;
        }
        if (buf_str(&text, ": slurmctld logs that no switch reaches all nodes, and a job is placed "
                           "within one part when it fits") < 0
            || comment(text.p, text.n, out) < 0)
            goto done;
    }
    for (size_t i = 0; i < t->nleaves; i++) {
        int32_t g = t->leaf_order[i];
        size_t n = 0;
        for (int32_t j = t->host_off[g]; j < t->host_off[g + 1]; j++) t->scratch[n++] = t->hosts[t->host_ids[j]];
        if (buf_str(out, "SwitchName=") < 0 || buf_span(out, f->name[g]) < 0 || buf_str(out, " Nodes=") < 0)
            goto done;
        int c = compress(t->scratch, n, out);
        if (c <= 0) {
            rc = c;
            goto done;
        }
        if (buf_put(out, "\n", 1) < 0) goto done;
    }
    for (size_t o = 0; o < nu; o++) {
        int32_t g = written[o];
        size_t n = (size_t)(group_off[g + 1] - group_off[g]);
        if (n) {
            char count[32];
            snprintf(count, sizeof count, "%zu", n + 1);
            t->scratch[0] = f->name[g];
            for (size_t i = 0; i < n; i++) t->scratch[i + 1] = f->name[group[(size_t)group_off[g] + i]];
            text.n = 0;
            if (buf_str(&text, "SwitchName=") < 0 || buf_span(&text, f->name[g]) < 0
                || buf_str(&text, " stands for ") < 0 || buf_str(&text, count) < 0
                || buf_str(&text, " switches with the same children: ") < 0)
                goto done;
            int c = compress(t->scratch, n + 1, &text);
            if (c <= 0) {
                rc = c;
                goto done;
            }
            if (comment(text.p, text.n, out) < 0) goto done;
        }
        for (size_t i = 0; i < t->up[g].n; i++) t->scratch[i] = f->name[t->up[g].kids[i]];
        if (buf_str(out, "SwitchName=") < 0 || buf_span(out, f->name[g]) < 0 || buf_str(out, " Switches=") < 0)
            goto done;
        int c = compress(t->scratch, t->up[g].n, out);
        if (c <= 0) {
            rc = c;
            goto done;
        }
        if (buf_put(out, "\n", 1) < 0) goto done;
    }
    rc = 1;
done:
    free(text.p);
    free(fill);
    free(written);
    free(group_off);
    free(group);
    return rc;
}

PyObject *ibnetdiscover_tree_conf(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *text, *widths, *speeds;
    if (!PyArg_ParseTuple(args, "UO!O!:tree_conf", &text, &PyFrozenSet_Type, &widths, &PyFrozenSet_Type,
                          &speeds))
        return NULL;
    if (!PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_ValueError, "tree_conf() needs ASCII text (use the Python path)");
        return NULL;
    }
    pos_t p = (pos_t)PyUnicode_1BYTE_DATA(text);
    size_t len = (size_t)PyUnicode_GET_LENGTH(text);
    rates_t rates = {widths, speeds, NULL, NULL, 0, 0};
    fabric_t f = {0};
    tree_t t = {0};
    buf_t out = {0};
    PyObject *result = NULL;
    t.f = &f;
    int rc = read_lines(&f, &rates, p, p + len);
    if (rc > 0) rc = resolve(&f);
    if (rc > 0) rc = whole(&f, p, len);
    if (rc > 0) rc = switch_names(&f);
    if (rc > 0) rc = place(&t);
    if (rc > 0) rc = build_tree(&t);
    if (rc > 0) rc = write_conf(&t, &out);
    if (rc > 0) result = PyUnicode_DecodeASCII(out.p, (Py_ssize_t)out.n, NULL);
    else if (rc == 0) result = Py_NewRef(Py_None);
    else if (!PyErr_Occurred()) PyErr_NoMemory();
    tree_free(&t);
    fabric_free(&f);
    free(out.p);
    return result;
}
