/*
 * Compiled scanner for ibnetdiscover's plain topology output: the bulk path's first step.
 *
 * scan(text, widths, speeds) accepts exactly the texts that ibnetdiscover.fast._FAST accepts
 * (every line a node header, a port line, an allowed record/comment line, or blank; no double
 * quote outside a node id or description; a known width and speed on every port line) and
 * returns the same columns as ibnetdiscover.fast._scan_regex:
 *
 *   ids      the node id of every quoted line (a node header's own id, a port line's remote id)
 *   headers  the quoted-line numbers of the node headers, ascending
 *   kinds    ("Switch" | "Ca" | "Rt", port count) of each node header
 *   descs    the description of each node header
 *
 * or None when the text is outside that grammar (the line parser then decides and names the
 * bad line). `text` must be ASCII (str.isascii()); the caller uses the regex scanner otherwise.
 * The pure-Python scanner is the reference: tests/unit/test_ibnetdiscover_scan.py checks both
 * give the same result on the fixtures and on random mutations of them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef const char *pos_t;

static PyObject *kind_switch, *kind_ca, *kind_rt;

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static inline int is_blank(char c) { return c == ' ' || c == '\t'; }
static inline int is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* \d+ : the end of the digits, or NULL if there are none. */
static pos_t digits1(pos_t p, pos_t e) {
    pos_t s = p;
    while (p < e && is_digit(*p)) p++;
    return p > s ? p : NULL;
}

/* [ \t]* */
static pos_t blanks0(pos_t p, pos_t e) {
    while (p < e && is_blank(*p)) p++;
    return p;
}

/* [ \t]+ */
static pos_t blanks1(pos_t p, pos_t e) {
    pos_t q = blanks0(p, e);
    return q > p ? q : NULL;
}

/* A literal. */
static pos_t lit(pos_t p, pos_t e, const char *s, size_t n) {
    return ((size_t)(e - p) >= n && memcmp(p, s, n) == 0) ? p + n : NULL;
}

/* [^"\n]* up to the line end: true if nothing but such characters remain. */
static int rest_ok(pos_t p, pos_t e) {
    return memchr(p, '"', (size_t)(e - p)) == NULL;
}

/* (?:\([0-9a-fA-F]+\))?+ : a port GUID in parentheses, possessively optional. */
static pos_t guid_paren(pos_t p, pos_t e) {
    if (p >= e || *p != '(') return p;
    pos_t q = p + 1, s = q;
    while (q < e && is_hex(*q)) q++;
    if (q == s || q >= e || *q != ')') return p; /* the group matches empty; the caller fails on '(' */
    return q + 1;
}

/* "[^"\n]+" or "[^"\n]*" : the quoted text's bounds in *s, *n; the position after the closing quote. */
static pos_t quoted(pos_t p, pos_t e, int nonempty, pos_t *s, Py_ssize_t *n) {
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
static int known(PyObject *names, pos_t p, Py_ssize_t n) {
    PyObject *word = PyUnicode_DecodeASCII(p, n, NULL);
    if (word == NULL) return -1;
    int found = PySet_Contains(names, word);
    Py_DECREF(word);
    return found;
}

/* The rate word of a port line, as `(?=(?:W)(?:S)(?![A-Z\d]))\d++x[A-Z]++\d*+`: the digits and
 * 'x' are a known width and the run of [A-Z\d] after it a known speed (that run is then what
 * [A-Z]++\d*+ matches, as every speed is letters then digits). Returns 1, 0 or -1 on error. */
static int rate_ok(rates_t *r, pos_t p, pos_t e) {
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
static int port_line(rates_t *r, pos_t p, pos_t e, pos_t *id, Py_ssize_t *idn) {
    pos_t d;
    Py_ssize_t dn;
    p = digits1(p + 1, e);
    if (!p || p >= e || *p != ']') return 0;
    p = blanks0(guid_paren(p + 1, e), e);
    if (!(p = quoted(p, e, 1, id, idn))) return 0;
    if (p >= e || *p != '[') return 0;
    p = digits1(p + 1, e);
    if (!p || p >= e || *p != ']') return 0;
    p = blanks0(guid_paren(p + 1, e), e);
    if (p >= e || *p != '#') return 0;
    p = blanks0(p + 1, e);
    pos_t q = lit(p, e, "lid ", 4);
    if (q && (q = digits1(q, e)) && (q = lit(q, e, " lmc ", 5)) && (q = digits1(q, e)) && (q = lit(q, e, " ", 1)))
        p = q;
    if (!(p = quoted(p, e, 0, &d, &dn))) return 0;
    if (!(p = blanks1(p, e)) || !(p = lit(p, e, "lid", 3)) || !(p = blanks1(p, e)) || !(p = digits1(p, e))
        || !(p = blanks1(p, e)))
        return 0;
    int ok = rate_ok(r, p, e);
    if (ok <= 0) return ok;
    return rest_ok(p, e);
}

/* A node header after its kind word: [ \t]+N[ \t]+"id"[ \t]*#[ \t]*"desc"... */
static int header_line(pos_t p, pos_t e, pos_t *np, Py_ssize_t *nn, pos_t *id, Py_ssize_t *idn,
                       pos_t *desc, Py_ssize_t *descn) {
    if (!(p = blanks1(p, e))) return 0;
    *np = p;
    if (!(p = digits1(p, e))) return 0;
    *nn = p - *np;
    if (!(p = blanks1(p, e)) || !(p = quoted(p, e, 1, id, idn))) return 0;
    p = blanks0(p, e);
    if (p >= e || *p != '#') return 0;
    p = blanks0(p + 1, e);
    if (!(p = quoted(p, e, 0, desc, descn))) return 0;
    return rest_ok(p, e);
}

/* A line that is a record or comment line the fast path allows: prefix, then [^"\n]*. */
static int other_line(pos_t p, pos_t e) {
    static const char *const prefixes[] = {"vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=",
                                           "rtguid=", "#", "Non-Chassis Nodes", "Chassis "};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        pos_t q = lit(p, e, prefixes[i], strlen(prefixes[i]));
        if (q) return rest_ok(q, e);
    }
    return blanks0(p, e) == e;
}

static int append_new(PyObject *list, PyObject *item) {
    if (item == NULL) return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *text, *widths, *speeds;
    if (!PyArg_ParseTuple(args, "UO!O!:scan", &text, &PyFrozenSet_Type, &widths, &PyFrozenSet_Type, &speeds))
        return NULL;
    if (!PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_ValueError, "scan() needs ASCII text (use the regex scanner)");
        return NULL;
    }
    pos_t p = (pos_t)PyUnicode_1BYTE_DATA(text);
    pos_t end = p + PyUnicode_GET_LENGTH(text);
    rates_t rates = {widths, speeds, NULL, NULL, 0, 0};
    PyObject *ids = PyList_New(0), *headers = PyList_New(0), *kinds = PyList_New(0), *descs = PyList_New(0);
    PyObject *result = NULL;
    Py_ssize_t quoted_lines = 0;
    if (!ids || !headers || !kinds || !descs) goto done;
    for (;;) {
        pos_t e = memchr(p, '\n', (size_t)(end - p));
        if (e == NULL) e = end;
        pos_t id = NULL, np = NULL, desc = NULL;
        Py_ssize_t idn = 0, nn = 0, descn = 0;
        PyObject *kind = NULL;
        int ok;
        if (p < e && *p == '[') {
            ok = port_line(&rates, p, e, &id, &idn);
        } else if ((kind = lit(p, e, "Switch", 6) ? kind_switch
                          : lit(p, e, "Ca", 2)   ? kind_ca
                          : lit(p, e, "Rt", 2)   ? kind_rt
                                                 : NULL) != NULL
                   && p + (kind == kind_switch ? 6 : 2) < e && is_blank(p[kind == kind_switch ? 6 : 2])) {
            ok = header_line(p + (kind == kind_switch ? 6 : 2), e, &np, &nn, &id, &idn, &desc, &descn);
        } else {
            kind = NULL;
            ok = other_line(p, e);
        }
        if (ok < 0) goto done;
        if (ok == 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (id != NULL) {
            if (append_new(ids, PyUnicode_DecodeASCII(id, idn, NULL)) < 0) goto done;
            if (kind != NULL) {
                char digits[32];
                PyObject *ports;
                if (nn < (Py_ssize_t)sizeof digits) {
                    memcpy(digits, np, (size_t)nn);
                    digits[nn] = '\0';
                    ports = PyLong_FromString(digits, NULL, 10);
                } else {
                    PyObject *word = PyUnicode_DecodeASCII(np, nn, NULL);
                    ports = word ? PyLong_FromUnicodeObject(word, 10) : NULL;
                    Py_XDECREF(word);
                }
                if (ports == NULL) goto done;
                PyObject *pair = PyTuple_Pack(2, kind, ports);
                Py_DECREF(ports);
                if (append_new(kinds, pair) < 0 || append_new(headers, PyLong_FromSsize_t(quoted_lines)) < 0
                    || append_new(descs, PyUnicode_DecodeASCII(desc, descn, NULL)) < 0)
                    goto done;
            }
            quoted_lines++;
        }
        if (e == end) break;
        p = e + 1;
    }
    result = PyTuple_Pack(4, ids, headers, kinds, descs);
done:
    Py_XDECREF(ids);
    Py_XDECREF(headers);
    Py_XDECREF(kinds);
    Py_XDECREF(descs);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text, widths, speeds) -> (ids, headers, kinds, descs) | None: the bulk path's columns of\n"
     "plain, well-formed ibnetdiscover output (see fabric.parsers.ibnetdiscover.fast._scan_regex)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ibnetdiscover_scan", "Compiled scanner for ibnetdiscover output.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ibnetdiscover_scan(void) {
    kind_switch = PyUnicode_InternFromString("Switch");
    kind_ca = PyUnicode_InternFromString("Ca");
    kind_rt = PyUnicode_InternFromString("Rt");
    if (!kind_switch || !kind_ca || !kind_rt) return NULL;
    return PyModule_Create(&module);
}
