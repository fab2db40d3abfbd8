/*
 * The line grammar of ibnetdiscover's plain topology output, shared by the compiled scanner
 * (_ibnetdiscover_scan.c: scan) and the compiled topology.conf writer (_ibnetdiscover_tree.c:
 * tree_conf). Each function matches one piece of a line [p, e) (e is the line's end, before its
 * newline) as ibnetdiscover.fast._FAST_LINE does, possessively: the position after it, or NULL.
 */
#ifndef IBNETDISCOVER_LINES_H
#define IBNETDISCOVER_LINES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef const char *pos_t;

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static inline int is_blank(char c) { return c == ' ' || c == '\t'; }
static inline int is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* \d+ : the end of the digits, or NULL if there are none. */
static inline pos_t digits1(pos_t p, pos_t e) {
    pos_t s = p;
    while (p < e && is_digit(*p)) p++;
    return p > s ? p : NULL;
}

/* Whether the digit run at p is over `most`, read as ibnetdiscover._check_ranges reads it: the
 * value of its first 12 digits (no run: not over). */
static inline int over(pos_t p, pos_t e, unsigned long long most) {
    unsigned long long v = 0;
    for (int k = 0; k < 12 && p + k < e && is_digit(p[k]); k++) v = v * 10 + (unsigned long long)(p[k] - '0');
    return v > most;
}

/* The most a LID (unicast), an LMC and a port number or count may be (ibnetdiscover.MAX_*). */
#define MAX_UNICAST_LID 0xBFFFULL
#define MAX_LMC 7ULL
#define MAX_PORT 255ULL

/* \d+ : its end, or NULL; with `strict`, NULL for a number over `most` too (declined, so that the
 * Python path names the line: the topology.conf writer; the scanner matches the regex path, which
 * reads any number, and parse checks the ranges before it). */
static inline pos_t number(pos_t p, pos_t e, unsigned long long most, int strict) {
    return strict && over(p, e, most) ? NULL : digits1(p, e);
}

/* [ \t]* */
static inline pos_t blanks0(pos_t p, pos_t e) {
    while (p < e && is_blank(*p)) p++;
    return p;
}

/* [ \t]+ */
static inline pos_t blanks1(pos_t p, pos_t e) {
    pos_t q = blanks0(p, e);
    return q > p ? q : NULL;
}

/* A literal. */
static inline pos_t lit(pos_t p, pos_t e, const char *s, size_t n) {
    if ((size_t)(e - p) < n) return NULL;
    for (size_t i = 0; i < n; i++) /* short literals: a loop beats a call to memcmp */
        if (p[i] != s[i]) return NULL;
    return p + n;
}

/* No "lid" or "lmc" in [p, e), then blanks and a number out of range: ibnetdiscover._check_ranges
 * reads the whole text, descriptions and comments too. */
static inline int lids_ok(pos_t p, pos_t e) {
    while (p < e && (p = memchr(p, 'l', (size_t)(e - p))) != NULL) {
        if (e - p > 3 && ((p[1] == 'i' && p[2] == 'd') || (p[1] == 'm' && p[2] == 'c')) && is_blank(p[3])) {
            pos_t q = blanks0(p + 3, e);
            if (over(q, e, p[1] == 'i' ? MAX_UNICAST_LID : MAX_LMC)) return 0;
        }
        p++;
    }
    return 1;
}

/* [^"\n]* up to the line end: true if nothing but such characters remain. */
static inline int rest_ok(pos_t p, pos_t e) {
    return memchr(p, '"', (size_t)(e - p)) == NULL;
}

/* (?:\([0-9a-fA-F]+\))?+ : a port GUID in parentheses, possessively optional. */
static inline pos_t guid_paren(pos_t p, pos_t e) {
    if (p >= e || *p != '(') return p;
    pos_t q = p + 1, s = q;
    while (q < e && is_hex(*q)) q++;
    if (q == s || q >= e || *q != ')') return p; /* the group matches empty; the caller fails on '(' */
    return q + 1;
}

/* "[^"\n]+" or "[^"\n]*" : the quoted text's bounds in *s, *n; the position after the closing quote. */
static inline pos_t quoted(pos_t p, pos_t e, int nonempty, pos_t *s, Py_ssize_t *n) {
    if (p >= e || *p != '"') return NULL;
    pos_t q = memchr(p + 1, '"', (size_t)(e - p - 1));
    if (q == NULL || (nonempty && q == p + 1)) return NULL;
    *s = p + 1;
    *n = q - (p + 1);
    return q + 1;
}

typedef struct {
    PyObject *widths, *speeds;           /* frozensets of known names */
    pos_t last_w, last_s;                /* the last rate words found in them */
    Py_ssize_t last_wn, last_sn;
} rates_t;

/* Whether text[p:p+n] is a member of `names` (a set of str); -1 on error. */
static inline int known(PyObject *names, pos_t p, Py_ssize_t n) {
    PyObject *word = PyUnicode_DecodeASCII(p, n, NULL);
    if (word == NULL) return -1;
    int found = PySet_Contains(names, word);
    Py_DECREF(word);
    return found;
}

/* The rate word of a port line, as `(?=(?:W)(?:S)(?![A-Z\d]))\d++x[A-Z]++\d*+`: the digits and
 * 'x' are a known width and the run of [A-Z\d] after it a known speed (that run is then what
 * [A-Z]++\d*+ matches, as every speed is letters then digits). Returns 1, 0 or -1 on error. */
static inline int rate_ok(rates_t *r, pos_t p, pos_t e) {
    pos_t w = digits1(p, e);
    if (w == NULL || w >= e || *w != 'x') return 0;
    w++;
    pos_t s = w;
    while (s < e && (is_upper(*s) || is_digit(*s))) s++;
    if (s == w || !is_upper(*w)) return 0;
    Py_ssize_t wn = w - p, sn = s - w;
    if (!(r->last_w && wn == r->last_wn && memcmp(p, r->last_w, (size_t)wn) == 0)) {
        int found = known(r->widths, p, wn);
        if (found <= 0) return found;
        r->last_w = p;
        r->last_wn = wn;
    }
    if (!(r->last_s && sn == r->last_sn && memcmp(w, r->last_s, (size_t)sn) == 0)) {
        int found = known(r->speeds, w, sn);
        if (found <= 0) return found;
        r->last_s = w;
        r->last_sn = sn;
    }
    return 1;
}

/* A port line: [N](guid)? "id"[N](guid)? # (lid N lmc N )?"desc" lid N <width><speed>...
 * Returns 1 (id in *id, *idn), 0 or -1 on error. */
static inline int port_line(rates_t *r, pos_t p, pos_t e, pos_t *id, Py_ssize_t *idn, int strict) {
    pos_t d;
    Py_ssize_t dn;
    p = number(p + 1, e, MAX_PORT, strict);
    if (!p || p >= e || *p != ']') return 0;
    p = blanks0(guid_paren(p + 1, e), e);
    if (!(p = quoted(p, e, 1, id, idn))) return 0;
    if (p >= e || *p != '[') return 0;
    p = number(p + 1, e, MAX_PORT, strict);
    if (!p || p >= e || *p != ']') return 0;
    p = blanks0(guid_paren(p + 1, e), e);
    if (p >= e || *p != '#') return 0;
    p = blanks0(p + 1, e);
    pos_t q = lit(p, e, "lid ", 4);
    if (q && (q = number(q, e, MAX_UNICAST_LID, strict)) && (q = lit(q, e, " lmc ", 5)) && (q = number(q, e, MAX_LMC, strict))
        && (q = lit(q, e, " ", 1)))
        p = q;
    if (!(p = quoted(p, e, 0, &d, &dn)) || (strict && !lids_ok(d, d + dn))) return 0;
    if (!(p = blanks1(p, e)) || !(p = lit(p, e, "lid", 3)) || !(p = blanks1(p, e))
        || !(p = number(p, e, MAX_UNICAST_LID, strict)) || !(p = blanks1(p, e)))
        return 0;
    int ok = rate_ok(r, p, e);
    if (ok <= 0) return ok;
    return rest_ok(p, e) && (!strict || lids_ok(p, e));
}

/* A node header after its kind word: [ \t]+N[ \t]+"id"[ \t]*#[ \t]*"desc"... */
static inline int header_line(pos_t p, pos_t e, pos_t *np, Py_ssize_t *nn, pos_t *id, Py_ssize_t *idn,
                       pos_t *desc, Py_ssize_t *descn, int strict) {
    if (!(p = blanks1(p, e))) return 0;
    *np = p;
    if (!(p = number(p, e, MAX_PORT, strict))) return 0;
    *nn = p - *np;
    if (!(p = blanks1(p, e)) || !(p = quoted(p, e, 1, id, idn))) return 0;
    p = blanks0(p, e);
    if (p >= e || *p != '#') return 0;
    p = blanks0(p + 1, e);
    if (!(p = quoted(p, e, 0, desc, descn))) return 0;
    return rest_ok(p, e) && (!strict || lids_ok(*desc, e));
}

/* A line that is a record or comment line the fast path allows: prefix, then [^"\n]*. */
static inline int other_line(pos_t p, pos_t e, int strict) {
    static const struct {
        const char *s;
        size_t n;
    } prefixes[] = {{"vendid=", 7}, {"devid=", 6}, {"sysimgguid=", 11}, {"switchguid=", 11}, {"caguid=", 7},
                    {"rtguid=", 7}, {"#", 1}, {"Non-Chassis Nodes", 17}, {"Chassis ", 8}};
    for (size_t i = 0; p < e && i < sizeof prefixes / sizeof *prefixes; i++) {
        if (*p != prefixes[i].s[0]) continue; /* most lines fail at the first character */
        pos_t q = lit(p, e, prefixes[i].s, prefixes[i].n);
        if (q) return rest_ok(q, e) && (!strict || lids_ok(p, e));
    }
    return blanks0(p, e) == e;
}

/* The kind word of a node header line (Switch, Ca or Rt, then a blank): its length, or 0. */
static inline size_t header_kind(pos_t p, pos_t e) {
    size_t n = lit(p, e, "Switch", 6) ? 6 : (lit(p, e, "Ca", 2) || lit(p, e, "Rt", 2)) ? 2 : 0;
    return (n && p + n < e && is_blank(p[n])) ? n : 0;
}

#endif
