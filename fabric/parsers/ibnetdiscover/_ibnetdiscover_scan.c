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
#include "_ibnetdiscover_lines.h"

static PyObject *kind_switch, *kind_ca, *kind_rt;

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
            ok = port_line(&rates, p, e, &id, &idn, 0);
        } else if ((kind = lit(p, e, "Switch", 6) ? kind_switch
                          : lit(p, e, "Ca", 2)   ? kind_ca
                          : lit(p, e, "Rt", 2)   ? kind_rt
                                                 : NULL) != NULL
                   && p + (kind == kind_switch ? 6 : 2) < e && is_blank(p[kind == kind_switch ? 6 : 2])) {
            ok = header_line(p + (kind == kind_switch ? 6 : 2), e, &np, &nn, &id, &idn, &desc, &descn, 0);
        } else {
            kind = NULL;
            ok = other_line(p, e, 0);
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

/* _ibnetdiscover_tree.c */
PyObject *ibnetdiscover_tree_conf(PyObject *self, PyObject *args);

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text, widths, speeds) -> (ids, headers, kinds, descs) | None: the bulk path's columns of\n"
     "plain, well-formed ibnetdiscover output (see fabric.parsers.ibnetdiscover.fast._scan_regex)."},
    {"tree_conf", ibnetdiscover_tree_conf, METH_VARARGS,
     "tree_conf(text, widths, speeds) -> str | None: Slurm's topology.conf (topology/tree) of\n"
     "ibnetdiscover output, as fabric.topology.slurm.tree_conf(parse(text)) writes it, or None to\n"
     "decline (the caller then runs that Python path; see _ibnetdiscover_tree.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ibnetdiscover_scan", "Compiled scanner and topology.conf writer for ibnetdiscover output.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ibnetdiscover_scan(void) {
    kind_switch = PyUnicode_InternFromString("Switch");
    kind_ca = PyUnicode_InternFromString("Ca");
    kind_rt = PyUnicode_InternFromString("Rt");
    if (!kind_switch || !kind_ca || !kind_rt) return NULL;
    return PyModule_Create(&module);
}
