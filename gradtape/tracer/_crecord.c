/* The eager recording hot path in C: `record`, the same function as
 * gradtape/tracer/recording.py's Recording.record, step for step.
 *
 * Why C: in an eager training loop every op a tape records runs this code,
 * and in Python it is about 200 bytecodes (some 13,000 instructions) per op,
 * as much as the whole native gradient call of a small model
 * (docs/optimization.md). Here it is a few hundred instructions.
 *
 * What stays in Python (recording.py, called from here): everything off the
 * common path. Scalar constants the Literal memo does not hold yet and tensor
 * constants not yet leaves (`_constants`), holding an array its owner can
 * still write (held_arrays.py's `hold`), misses of the type and signature
 * memos (`_type_of`, `_signature`: the shape rules), and structure entries
 * for ops whose params hold objects (`_structure_entry`). An operand of a
 * class this file does not know (a Tensor subclass other than PendingTensor
 * and Variable) hands the whole op to the Python method, before anything is
 * recorded. So the two implementations record identical structures; the
 * tests (tests/tracer/test_crecord.py) compare them op by op.
 *
 * Objects are reached through the slot offsets of their Python classes
 * (read from the classes' member descriptors by `setup`), as CPython's own
 * slot descriptors reach them. Which slots, and what each must hold, is
 * declared in gradtape/tracer/c_view.py and handed to `setup`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* Set by setup(): the classes, memos and Python helpers this file uses (see `needed` below). */
static PyTypeObject *recording_type, *pending_type, *tensor_type, *variable_type, *ndarray_type, *float64_type;
static PyObject *signatures_memo, *types_memo, *literals_memo;  /* recording._signatures, _types, _literals */
static PyObject *py_record, *py_signature, *py_type_of, *constant_kind, *variable_kind, *float64_dtype, *int64_dtype;
static PyObject *py_watch_integer_variable, *py_hold;
static PyTypeObject *op_type, *held_type;  /* ir.op.Op, held_arrays.Held */
static PyObject *internal_dirs, *held_exact_bytes;  /* held_arrays._INTERNAL, held_arrays.EXACT_BYTES */

/* Slot offsets. */
static Py_ssize_t off_sym, off_value;  /* Tensor._sym, Tensor._value */
static Py_ssize_t off_version, off_trainable;  /* Variable */
static Py_ssize_t off_shape, off_dtype, off_op, off_args, off_params, off_forced, off_keep;  /* PendingTensor */
static Py_ssize_t off_held_array, off_held_op, off_held_site, off_held_fingerprint;  /* Held */
static Py_ssize_t off_var_of, off_info, off_structure, off_values, off_leaves, off_deferred;  /* Recording */
static Py_ssize_t off_versions, off_literals, off_const_of, off_sources, off_variables, off_snapshots;  /* Recording */
static Py_ssize_t off_held;  /* Recording */

static PyObject *s_constants, *s_input_types, *s_structure_entry;
static PyObject *s_shape, *s_dtype, *s_kind;

#define PyArray_CheckExact_(o) (Py_TYPE(o) == ndarray_type)
#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* The class's own namespace is read through cls.__dict__, never cls->tp_dict: from Python 3.12
 * on, a static builtin type (object, int, ...) has tp_dict NULL (its dict lives in the
 * interpreter state), and a setup naming such a class crashed in PyDict_GetItemString
 * (tests/tracer/test_crecord_builtin_class.py). */
static int slot_offset(PyTypeObject *cls, const char *name, Py_ssize_t *out)
{
    PyObject *ns = PyObject_GetAttrString((PyObject *)cls, "__dict__");  /* a mappingproxy */
    if (ns == NULL)
        return -1;
    PyObject *d = PyMapping_GetItemString(ns, name);
    Py_DECREF(ns);
    if (d == NULL && !PyErr_ExceptionMatches(PyExc_KeyError))
        return -1;
    PyErr_Clear();
    int member = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type);
    /* the descriptor stays alive after the DECREF: the class's namespace holds it */
    PyMemberDef *m = member ? ((PyMemberDescrObject *)d)->d_member : NULL;
    Py_XDECREF(d);
    if (!member) {
        PyErr_Format(PyExc_TypeError, "_crecord.setup: %s.%s is not a __slots__ member", cls->tp_name, name);
        return -1;
    }
    if (m->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "_crecord.setup: %s.%s is not an object slot", cls->tp_name, name);
        return -1;
    }
    *out = m->offset;
    return 0;
}

/* A slot of a Recording, a borrowed reference; NULL with an error when unset, or when
 * `list` and it is not a list (record() indexes those directly). */
static PyObject *rec_slot(PyObject *rec, Py_ssize_t off, const char *name, int list)
{
    PyObject *v = SLOT(rec, off);
    if (v == NULL)
        PyErr_Format(PyExc_AttributeError, "Recording.%s is not set", name);
    else if (list && !PyList_Check(v)) {
        PyErr_Format(PyExc_TypeError, "Recording.%s is not a list", name);
        v = NULL;
    }
    return v;
}

/* positions.get(id(obj)) for a dict keyed by id() (const_of) as a borrowed reference, NULL when absent
 * (or on error: check PyErr_Occurred). */
static PyObject *position_of(PyObject *var_of, PyObject *obj)
{
    PyObject *key = PyLong_FromVoidPtr(obj);
    if (key == NULL)
        return NULL;
    PyObject *p = PyDict_GetItemWithError(var_of, key);
    Py_DECREF(key);
    return p;
}

/* info[p][1], the type id at position p (borrowed). */
static PyObject *type_id_at(PyObject *info, PyObject *p)
{
    Py_ssize_t i = PyLong_AsSsize_t(p);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || i >= PyList_GET_SIZE(info)) {
        PyErr_SetString(PyExc_IndexError, "recording position out of range");
        return NULL;
    }
    PyObject *entry = PyList_GET_ITEM(info, i);
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 2) {
        PyErr_SetString(PyExc_TypeError, "recording info entry is not a tuple");
        return NULL;
    }
    return PyTuple_GET_ITEM(entry, 1);
}

/* An op's operands as its structure entry sees them: per operand, its input (a position, a
 * literal's key, or None while unknown) and its type id (None while unknown), as new references
 * in C arrays. Two lists per op cost 5% of recording ADBench's LSTM; lists are made only for
 * the Python that record_impl calls off the common path (`operands_lists`). */
#define SMALL_OPERANDS 8
typedef struct {
    Py_ssize_t n;
    PyObject **inputs, **type_ids;
    PyObject *small[2 * SMALL_OPERANDS];
} Operands;

static int operands_init(Operands *o, Py_ssize_t n)
{
    o->n = 0;
    o->inputs = o->small;
    if (n > SMALL_OPERANDS && (o->inputs = PyMem_Malloc(2 * n * sizeof(PyObject *))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->type_ids = o->inputs + (n > SMALL_OPERANDS ? n : SMALL_OPERANDS);
    o->n = n;
    for (Py_ssize_t i = 0; i < n; i++)
        o->inputs[i] = Py_NewRef(Py_None), o->type_ids[i] = Py_NewRef(Py_None);
    return 0;
}

static void operands_clear(Operands *o)
{
    for (Py_ssize_t i = 0; i < o->n; i++)
        Py_DECREF(o->inputs[i]), Py_DECREF(o->type_ids[i]);
    if (o->inputs != o->small)
        PyMem_Free(o->inputs);
    o->n = 0;
}

/* inputs[i] = p (the reference is stolen) and type_ids[i] = tid (borrowed). */
static void operands_set(Operands *o, Py_ssize_t i, PyObject *p, PyObject *tid)
{
    Py_SETREF(o->inputs[i], p);
    Py_SETREF(o->type_ids[i], Py_NewRef(tid));
}

/* A new list of n items (new references). */
static PyObject *list_of(PyObject **items, Py_ssize_t n)
{
    PyObject *out = PyList_New(n);
    if (out != NULL)
        for (Py_ssize_t i = 0; i < n; i++)
            PyList_SET_ITEM(out, i, Py_NewRef(items[i]));
    return out;
}

/* The operands' inputs and type ids as two new lists, for recording.py's methods; 0 or -1. */
static int operands_lists(Operands *o, PyObject **inputs, PyObject **type_ids)
{
    *inputs = list_of(o->inputs, o->n);
    *type_ids = *inputs == NULL ? NULL : list_of(o->type_ids, o->n);
    if (*type_ids != NULL)
        return 0;
    Py_CLEAR(*inputs);
    return -1;
}

/* Take back the lists a Python method filled in (they must still have n items). */
static int operands_from_lists(Operands *o, PyObject *inputs, PyObject *type_ids)
{
    if (!PyList_Check(inputs) || !PyList_Check(type_ids) || PyList_GET_SIZE(inputs) != o->n ||
        PyList_GET_SIZE(type_ids) != o->n) {
        PyErr_SetString(PyExc_RuntimeError, "_crecord: Recording._constants changed the operands' lists");
        return -1;
    }
    for (Py_ssize_t i = 0; i < o->n; i++)
        operands_set(o, i, Py_NewRef(PyList_GET_ITEM(inputs, i)), PyList_GET_ITEM(type_ids, i));
    return 0;
}

/* inputs[i] = p and type_ids[i] = its type id; steals the reference to p (also on error). */
static int set_input(PyObject *info, Operands *o, Py_ssize_t i, PyObject *p)
{
    PyObject *tid = type_id_at(info, p);
    if (tid == NULL) {
        Py_DECREF(p);
        return -1;
    }
    operands_set(o, i, p, tid);
    return 0;
}

/* PyList_Append(list, item), growing a long list's storage by doubling it where CPython grows it
 * by an eighth: a recording's `structure`, `info` and `values` reach 60,000 items (ADBench's LSTM
 * at 1,024 steps), and at each eighth the whole array was copied (5% of the cache misses of
 * recording it). The storage is what list_resize manages (ob_item, allocated: the list's public
 * struct); the list stays an ordinary list, shrinking as CPython shrinks it. */
#define DOUBLING_FROM 1024
static int append_growing(PyObject *list, PyObject *item)
{
    PyListObject *l = (PyListObject *)list;
    Py_ssize_t n = Py_SIZE(l);
    if (PyList_CheckExact(list) && n >= DOUBLING_FROM && n == l->allocated &&
        (size_t)n <= PY_SSIZE_T_MAX / (2 * sizeof(PyObject *))) {
        PyObject **items = PyMem_Realloc(l->ob_item, 2 * n * sizeof(PyObject *));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        l->ob_item = items;
        l->allocated = 2 * n;
    }
    return PyList_Append(list, item);
}

/* Positions as Python ints, shared by every recording: a new int per recorded op (and its
 * freeing) cost 2% of recording ADBench's LSTM, whose 1,024 steps record 60,000 positions.
 * Ints are immutable, and recording.py compares positions by value, never by identity. The
 * table grows to the longest recording made (up to MAX_SHARED_POSITIONS: 32 bytes each). */
#define MAX_SHARED_POSITIONS (1 << 20)
static PyObject **shared_positions;
static Py_ssize_t n_shared_positions;

/* Position p as an int (a new reference). */
static PyObject *position_int(Py_ssize_t p)
{
    if (p < n_shared_positions)
        return Py_NewRef(shared_positions[p]);
    if (p < 0 || p >= MAX_SHARED_POSITIONS)
        return PyLong_FromSsize_t(p);
    Py_ssize_t size = n_shared_positions ? 2 * n_shared_positions : 1024;
    while (size <= p)
        size *= 2;
    if (size > MAX_SHARED_POSITIONS)
        size = MAX_SHARED_POSITIONS;
    PyObject **grown = PyMem_Realloc(shared_positions, size * sizeof(PyObject *));
    if (grown == NULL)
        return PyErr_NoMemory();
    shared_positions = grown;
    for (; n_shared_positions < size; n_shared_positions++)
        if ((grown[n_shared_positions] = PyLong_FromSsize_t(n_shared_positions)) == NULL)
            return NULL;
    return Py_NewRef(shared_positions[p]);
}

/* --- IdPositions: Recording.var_of, id(tensor) -> position, keyed by address -------------------
 *
 * A dict keyed by id() made an int for every recorded result and hashed addresses, all multiples
 * of 16, into a table whose initial slots are the hash's low bits: 1 in 16 of them took every
 * first probe. Recording ADBench's LSTM (bench/tape_recording.py, 60,000 results) spent 7% of
 * its time inserting there, and the ints and the table were a fifth of a recording's memory.
 * This table holds (address, position) pairs in one array, open addressing with linear probing
 * from a slot picked by the address's page and its offset in the page (id_hash). In Python it is a mapping from int to int (get,
 * [], in, pop, setdefault, items, len): what recording.py and rebind.py use of the dict it
 * replaces (without the extension var_of is a dict). It holds no references: a key is only a
 * number, as id() is. */
typedef struct {
    uintptr_t key;  /* 0: empty; 1: deleted (no object lives at address 0 or 1) */
    Py_ssize_t position;
} IdSlot;

typedef struct {
    PyObject_HEAD
    IdSlot *slots;
    size_t mask;      /* capacity - 1, the capacity a power of two */
    Py_ssize_t used;  /* keys held */
    size_t filled;    /* keys held and deleted slots */
} IdPositions;

#define ID_EMPTY ((uintptr_t)0)
#define ID_DELETED ((uintptr_t)1)

static PyTypeObject id_positions_type;

static size_t id_hash(uintptr_t key)
{
    /* Objects made one after the other lie side by side in memory, and so do their slots here:
     * the address's page picks a place in the table (Fibonacci hashing: the product's high bits
     * depend on every bit of the page number), and the offset in the page (in 16-byte steps,
     * the allocator's alignment) is added to it. A recording's inserts then walk the table as
     * they walk memory, rather than taking a cache miss each (4% of recording ADBench's LSTM). */
    uint64_t page = (uint64_t)key >> 12;
    return (size_t)(((page * 0x9E3779B97F4A7C15ull) >> 32) + ((key >> 4) & 0xFF));
}

/* The slot holding `key`, or NULL. */
static IdSlot *id_find(IdPositions *m, uintptr_t key)
{
    if (m->slots == NULL)
        return NULL;
    for (size_t i = id_hash(key) & m->mask;; i = (i + 1) & m->mask) {
        IdSlot *s = &m->slots[i];
        if (s->key == key)
            return s;
        if (s->key == ID_EMPTY)
            return NULL;
    }
}

/* The largest table of a freed IdPositions (`spare_capacity` slots), kept for the next table
 * that grows as large: a long recording's table is megabytes, which the allocator hands back to
 * the system when it is freed and takes again, page by page, one fault per page, in the next
 * step's recording (bench/tape_recording.py: about 500 faults a step for ADBench's LSTM). */
static IdSlot *spare_slots;
static size_t spare_capacity;

static IdSlot *id_slots_new(size_t capacity)
{
    if (spare_slots != NULL && capacity >= spare_capacity / 2 && capacity <= spare_capacity) {
        IdSlot *slots = spare_slots;
        spare_slots = NULL;
        spare_capacity = 0;
        memset(slots, 0, capacity * sizeof(IdSlot));
        return slots;
    }
    IdSlot *slots = PyMem_Calloc(capacity, sizeof(IdSlot));
    if (slots == NULL)
        PyErr_NoMemory();
    return slots;
}

/* Free a table of `capacity` slots, or keep it as the spare. */
static void id_slots_free(IdSlot *slots, size_t capacity)
{
    if (slots != NULL && capacity >= 4096 && capacity > spare_capacity) {
        PyMem_Free(spare_slots);
        spare_slots = slots;
        spare_capacity = capacity;
        return;
    }
    PyMem_Free(slots);
}

/* Rebuild the table with room for `need` keys at most half full (deleted slots dropped). */
static int id_resize(IdPositions *m, size_t need)
{
    size_t capacity = 16;
    while (capacity < 2 * need)
        capacity *= 2;
    IdSlot *fresh = id_slots_new(capacity);
    if (fresh == NULL)
        return -1;
    IdSlot *old = m->slots;
    size_t old_capacity = old ? m->mask + 1 : 0;
    m->slots = fresh;
    m->mask = capacity - 1;
    m->filled = (size_t)m->used;
    for (size_t i = 0; i < old_capacity; i++) {
        if (old[i].key == ID_EMPTY || old[i].key == ID_DELETED)
            continue;
        size_t j = id_hash(old[i].key) & m->mask;
        while (fresh[j].key != ID_EMPTY)
            j = (j + 1) & m->mask;
        fresh[j] = old[i];
    }
    PyMem_Free(old);  /* (a growing table's old one: smaller than what it becomes) */
    return 0;
}

/* m[key] = position */
static int id_set(IdPositions *m, uintptr_t key, Py_ssize_t position)
{
    IdSlot *s = id_find(m, key);
    if (s != NULL) {
        s->position = position;
        return 0;
    }
    /* at most 2/3 full, deleted slots counted (they lengthen probes as keys do) */
    if (m->slots == NULL || 3 * (m->filled + 1) > 2 * (m->mask + 1)) {
        if (id_resize(m, (size_t)m->used + 1) < 0)
            return -1;
    }
    size_t i = id_hash(key) & m->mask;
    IdSlot *first_deleted = NULL;
    for (;; i = (i + 1) & m->mask) {
        s = &m->slots[i];
        if (s->key == ID_EMPTY)
            break;
        if (s->key == ID_DELETED && first_deleted == NULL)
            first_deleted = s;
    }
    if (first_deleted != NULL)
        s = first_deleted;
    else
        m->filled++;
    s->key = key;
    s->position = position;
    m->used++;
    return 0;
}

/* The key an int stands for (an address) in *out: 0, or -1 with an error set for a key that is
 * no int. An int no address can be (0, 1, negative, too large) gives ID_EMPTY, which is never
 * held: it is reported as absent. */
static int id_key(PyObject *k, uintptr_t *out)
{
    if (!PyLong_Check(k)) {
        PyErr_Format(PyExc_TypeError, "IdPositions keys are ints (id()), not %.100s", Py_TYPE(k)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(k, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow > 0) {  /* above 2**63: an address only if it fits in 64 bits */
        unsigned long long u = PyLong_AsUnsignedLongLong(k);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            *out = ID_EMPTY;
            return 0;
        }
        *out = (uintptr_t)u;
        return 0;
    }
    *out = overflow < 0 || v < 2 ? ID_EMPTY : (uintptr_t)v;
    return 0;
}

static int id_position_arg(PyObject *v, Py_ssize_t *out)
{
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "IdPositions values are positions (ints), not %.100s", Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_ssize_t p = PyLong_AsSsize_t(v);
    if (p == -1 && PyErr_Occurred())
        return -1;
    if (p < 0) {
        PyErr_SetString(PyExc_ValueError, "IdPositions values are positions: not negative");
        return -1;
    }
    *out = p;
    return 0;
}

/* The position of key `k` (an int) as a new reference; NULL when absent (no error) or on error. */
static PyObject *id_lookup_int(IdPositions *m, PyObject *k)
{
    uintptr_t key;
    if (id_key(k, &key) < 0)
        return NULL;
    IdSlot *s = key == ID_EMPTY ? NULL : id_find(m, key);
    return s == NULL ? NULL : position_int(s->position);
}

static PyObject *id_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "IdPositions() takes no arguments");
        return NULL;
    }
    IdPositions *m = (IdPositions *)type->tp_alloc(type, 0);
    if (m != NULL) {
        m->slots = NULL;
        m->mask = 0;
        m->used = 0;
        m->filled = 0;
    }
    return (PyObject *)m;
}

static void id_dealloc(IdPositions *m)
{
    id_slots_free(m->slots, m->slots ? m->mask + 1 : 0);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static Py_ssize_t id_len(IdPositions *m) { return m->used; }

static PyObject *id_getitem(IdPositions *m, PyObject *k)
{
    PyObject *p = id_lookup_int(m, k);
    if (p == NULL && !PyErr_Occurred())
        PyErr_SetObject(PyExc_KeyError, k);
    return p;
}

/* Remove `key`; 1 when it was there, 0 when not. */
static int id_remove(IdPositions *m, uintptr_t key, Py_ssize_t *position)
{
    IdSlot *s = key == ID_EMPTY ? NULL : id_find(m, key);
    if (s == NULL)
        return 0;
    *position = s->position;
    s->key = ID_DELETED;
    m->used--;
    return 1;
}

static int id_ass_subscript(IdPositions *m, PyObject *k, PyObject *v)
{
    uintptr_t key;
    if (id_key(k, &key) < 0)
        return -1;
    if (v == NULL) {
        Py_ssize_t was;
        if (!id_remove(m, key, &was)) {
            PyErr_SetObject(PyExc_KeyError, k);
            return -1;
        }
        return 0;
    }
    Py_ssize_t p;
    if (id_position_arg(v, &p) < 0)
        return -1;
    if (key == ID_EMPTY) {
        PyErr_SetString(PyExc_ValueError, "IdPositions keys are addresses (id()): not 0, 1 or negative");
        return -1;
    }
    return id_set(m, key, p);
}

static int id_contains(IdPositions *m, PyObject *k)
{
    PyObject *p = id_lookup_int(m, k);
    if (p == NULL)
        return PyErr_Occurred() ? -1 : 0;
    Py_DECREF(p);
    return 1;
}

static PyObject *id_get(IdPositions *m, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc < 1 || argc > 2) {
        PyErr_SetString(PyExc_TypeError, "get(key, default=None)");
        return NULL;
    }
    PyObject *p = id_lookup_int(m, argv[0]);
    if (p == NULL && !PyErr_Occurred())
        p = Py_NewRef(argc == 2 ? argv[1] : Py_None);
    return p;
}

static PyObject *id_pop(IdPositions *m, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc < 1 || argc > 2) {
        PyErr_SetString(PyExc_TypeError, "pop(key[, default])");
        return NULL;
    }
    uintptr_t key;
    Py_ssize_t was;
    if (id_key(argv[0], &key) < 0)
        return NULL;
    if (id_remove(m, key, &was))
        return position_int(was);
    if (argc == 2)
        return Py_NewRef(argv[1]);
    PyErr_SetObject(PyExc_KeyError, argv[0]);
    return NULL;
}

static PyObject *id_setdefault(IdPositions *m, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "setdefault(key, position)");
        return NULL;
    }
    PyObject *p = id_lookup_int(m, argv[0]);
    if (p != NULL || PyErr_Occurred())
        return p;
    if (id_ass_subscript(m, argv[0], argv[1]) < 0)
        return NULL;
    return Py_NewRef(argv[1]);
}

static PyObject *id_items(IdPositions *m, PyObject *unused)
{
    PyObject *out = PyList_New(0);
    for (size_t i = 0; out != NULL && m->slots != NULL && i <= m->mask; i++) {
        IdSlot *s = &m->slots[i];
        if (s->key == ID_EMPTY || s->key == ID_DELETED)
            continue;
        PyObject *k = PyLong_FromVoidPtr((void *)s->key), *p = position_int(s->position);
        PyObject *pair = k && p ? PyTuple_Pack(2, k, p) : NULL;
        Py_XDECREF(k);
        Py_XDECREF(p);
        if (pair == NULL || PyList_Append(out, pair) < 0)
            Py_CLEAR(out);
        Py_XDECREF(pair);
    }
    return out;
}

static PyObject *id_iter(IdPositions *m)
{
    PyObject *items = id_items(m, NULL);
    if (items == NULL)
        return NULL;
    PyObject *keys = PyList_New(PyList_GET_SIZE(items));
    for (Py_ssize_t i = 0; keys != NULL && i < PyList_GET_SIZE(items); i++)
        PyList_SET_ITEM(keys, i, Py_NewRef(PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 0)));
    Py_DECREF(items);
    if (keys == NULL)
        return NULL;
    PyObject *it = PyObject_GetIter(keys);
    Py_DECREF(keys);
    return it;
}

static PyObject *id_repr(IdPositions *m)
{
    return PyUnicode_FromFormat("<IdPositions of %zd tensors>", m->used);
}

static PyMappingMethods id_as_mapping = {
    .mp_length = (lenfunc)id_len,
    .mp_subscript = (binaryfunc)id_getitem,
    .mp_ass_subscript = (objobjargproc)id_ass_subscript,
};

static PySequenceMethods id_as_sequence = {
    .sq_contains = (objobjproc)id_contains,
};

static PyMethodDef id_methods[] = {
    {"get", (PyCFunction)(void (*)(void))id_get, METH_FASTCALL, "get(key, default=None): the position of id `key`."},
    {"pop", (PyCFunction)(void (*)(void))id_pop, METH_FASTCALL, "pop(key[, default]): remove id `key`, return its position."},
    {"setdefault", (PyCFunction)(void (*)(void))id_setdefault, METH_FASTCALL,
     "setdefault(key, position): the position of id `key`, set to `position` when absent."},
    {"items", (PyCFunction)id_items, METH_NOARGS, "items(): a list of (id, position) pairs, in no order."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject id_positions_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gradtape.tracer._crecord.IdPositions",
    .tp_basicsize = sizeof(IdPositions),
    .tp_dealloc = (destructor)id_dealloc,
    .tp_repr = (reprfunc)id_repr,
    .tp_as_sequence = &id_as_sequence,
    .tp_as_mapping = &id_as_mapping,
    .tp_iter = (getiterfunc)id_iter,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "IdPositions(): id(tensor) -> position, Recording.var_of (a dict keyed by address, in C).",
    .tp_methods = id_methods,
    .tp_new = id_new,
};

/* var_of.get(id(obj)) as a new reference: NULL when absent (no error) or on error. var_of is an
 * IdPositions, or a dict (a Recording made while the extension was not set up). */
static PyObject *var_position(PyObject *var_of, PyObject *obj)
{
    if (Py_IS_TYPE(var_of, &id_positions_type)) {
        IdSlot *s = id_find((IdPositions *)var_of, (uintptr_t)obj);
        return s == NULL ? NULL : position_int(s->position);
    }
    PyObject *key = PyLong_FromVoidPtr(obj);
    if (key == NULL)
        return NULL;
    PyObject *p = PyDict_GetItemWithError(var_of, key);
    Py_DECREF(key);
    return Py_XNewRef(p);
}

/* var_of[id(obj)] = position */
static int var_set(PyObject *var_of, PyObject *obj, PyObject *position)
{
    if (Py_IS_TYPE(var_of, &id_positions_type)) {
        Py_ssize_t p;
        if (id_position_arg(position, &p) < 0)
            return -1;
        return id_set((IdPositions *)var_of, (uintptr_t)obj, p);
    }
    PyObject *key = PyLong_FromVoidPtr(obj);
    if (key == NULL)
        return -1;
    int err = PyDict_SetItem(var_of, key, position);
    Py_DECREF(key);
    return err;
}

/* obj.shape and obj.dtype as new references in *shape and *dtype; -1 on error (neither set). */
static int shape_and_dtype(PyObject *obj, PyObject **shape, PyObject **dtype)
{
    *shape = PyObject_GetAttr(obj, s_shape);
    if (*shape == NULL)
        return -1;
    *dtype = PyObject_GetAttr(obj, s_dtype);
    if (*dtype == NULL) {
        Py_CLEAR(*shape);
        return -1;
    }
    return 0;
}

/* A new leaf for `value`, of the type of `array` (Recording._leaf(value, kind)): an array
 * operand (value is array, kind CONSTANT) or a Variable read (array is what it holds now,
 * kept as the read's snapshot; kind VARIABLE). Returns its position (a new reference). */
static PyObject *new_leaf(PyObject *rec, PyObject *value, PyObject *array, PyObject *kind)
{
    PyObject *shape, *dtype;
    if (shape_and_dtype(array, &shape, &dtype) < 0)
        return NULL;
    PyObject *key = PyTuple_Pack(2, shape, dtype);
    PyObject *hit = NULL;
    if (key != NULL) {
        hit = PyDict_GetItemWithError(types_memo, key);
        if (hit != NULL)
            Py_INCREF(hit);
        else if (!PyErr_Occurred())
            hit = PyObject_CallFunctionObjArgs(py_type_of, shape, dtype, NULL);
        Py_DECREF(key);
    }
    Py_DECREF(shape);
    Py_DECREF(dtype);
    if (hit == NULL)
        return NULL;
    if (!PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 2) {
        Py_DECREF(hit);
        PyErr_SetString(PyExc_TypeError, "the type memo's entry is not a (type, id) pair");
        return NULL;
    }
    /* read after the memo's Python (_type_of) has run */
    PyObject *structure = rec_slot(rec, off_structure, "structure", 1);
    PyObject *info = rec_slot(rec, off_info, "info", 1);
    PyObject *values = rec_slot(rec, off_values, "values", 1);
    PyObject *leaves = rec_slot(rec, off_leaves, "leaves", 1);
    if (!structure || !info || !values || !leaves) {
        Py_DECREF(hit);
        return NULL;
    }
    PyObject *p = position_int(PyList_GET_SIZE(structure));
    PyObject *entry = PyTuple_Pack(2, PyTuple_GET_ITEM(hit, 1), kind);
    PyObject *snapshots = kind == variable_kind ? SLOT(rec, off_snapshots) : NULL;
    int err = p == NULL || entry == NULL || append_growing(structure, entry) || append_growing(info, hit) ||
              append_growing(values, value) ||
              (snapshots != NULL && (!PyDict_Check(snapshots) || PyDict_SetItem(snapshots, p, array))) ||
              PyList_Append(leaves, p);
    Py_XDECREF(entry);
    Py_DECREF(hit);
    if (err) {
        Py_XDECREF(p);
        return NULL;
    }
    return p;
}

/* (op, *type_ids, *params.items()): the signature memo's key, as recording.py makes it. */
static PyObject *signature_key(PyObject *op, Operands *o, PyObject *params)
{
    Py_ssize_t n = o->n, np_ = PyDict_GET_SIZE(params);
    PyObject *key = PyTuple_New(1 + n + np_);
    if (key == NULL)
        return NULL;
    PyTuple_SET_ITEM(key, 0, Py_NewRef(op));
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(key, 1 + i, Py_NewRef(o->type_ids[i]));
    Py_ssize_t pos = 0, j = 1 + n;
    PyObject *k, *v;
    while (PyDict_Next(params, &pos, &k, &v)) {
        if (j >= 1 + n + np_) {
            Py_DECREF(key);
            PyErr_SetString(PyExc_RuntimeError, "params changed size while recording");
            return NULL;
        }
        PyObject *item = PyTuple_Pack(2, k, v);
        if (item == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, j++, item);
    }
    return key;
}

/* The signature memo's recent hits by (op, type ids, params), compared by identity, so that a
 * hit skips the memo's key (a tuple of 1 + n + len(params) items, hashed and compared item by
 * item: a quarter of record's instructions). Params that are not the same dict count as the
 * same when their items are the same objects or equal exact ints (or tuples of them): what
 * the memo's key compares with ==, so the cache answers what the memo would. Each entry holds
 * references to what it compares by identity (op, type ids), so no address is reused while it
 * is cached, and a copy of the params; it is emptied
 * when the memo was cleared (its size fell), so that its signature ids stay the memo's. */
#define SIG_CACHE_SIZE 256
#define SIG_CACHE_OPERANDS 4
static struct {
    PyObject *op, *params, *hit;
    Py_ssize_t n;
    PyObject *type_ids[SIG_CACHE_OPERANDS];
} sig_cache[SIG_CACHE_SIZE];
static Py_ssize_t sig_memo_size;

static void sig_cache_clear(void)
{
    for (int s = 0; s < SIG_CACHE_SIZE; s++) {
        Py_CLEAR(sig_cache[s].op);
        Py_CLEAR(sig_cache[s].params);
        Py_CLEAR(sig_cache[s].hit);
        for (Py_ssize_t i = 0; i < sig_cache[s].n; i++)
            Py_CLEAR(sig_cache[s].type_ids[i]);
        sig_cache[s].n = 0;
    }
}

static size_t sig_cache_slot(PyObject *op, Operands *o, PyObject *params)
{
    size_t h = (size_t)op ^ (size_t)PyDict_GET_SIZE(params);
    for (Py_ssize_t i = 0; i < o->n; i++)
        h = h * 1000003u ^ (size_t)o->type_ids[i];
    h ^= h >> 17;
    return (h >> 4) % SIG_CACHE_SIZE;
}

/* Whether a == b as the memo's key compares them, for what this cache accepts: the same
 * object, or exact ints (or exact tuples of exact ints) that are equal. */
static int same_param(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b))
        return PyObject_RichCompareBool(a, b, Py_EQ) == 1;
    if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b) || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++) {
        PyObject *x = PyTuple_GET_ITEM(a, i), *y = PyTuple_GET_ITEM(b, i);
        if (x != y && !(PyLong_CheckExact(x) && PyLong_CheckExact(y) && PyObject_RichCompareBool(x, y, Py_EQ) == 1))
            return 0;
    }
    return 1;
}

static int same_params(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b))
        return 0;
    Py_ssize_t i = 0, j = 0;
    PyObject *ka, *va, *kb, *vb;
    while (PyDict_Next(a, &i, &ka, &va)) {
        if (!PyDict_Next(b, &j, &kb, &vb) || ka != kb || !same_param(va, vb))
            return 0;
    }
    return 1;
}

/* The cached memo entry for op on these operands with these params (a new reference), or NULL
 * (no error) on a miss. */
static PyObject *sig_cache_get(PyObject *op, Operands *o, PyObject *params)
{
    Py_ssize_t size = PyDict_GET_SIZE(signatures_memo);
    if (size < sig_memo_size)
        sig_cache_clear();
    sig_memo_size = size;
    if (o->n > SIG_CACHE_OPERANDS)
        return NULL;
    size_t s = sig_cache_slot(op, o, params);
    if (sig_cache[s].op != op || sig_cache[s].n != o->n)
        return NULL;
    for (Py_ssize_t i = 0; i < o->n; i++)
        if (sig_cache[s].type_ids[i] != o->type_ids[i])
            return NULL;
    if (!same_params(sig_cache[s].params, params))
        return NULL;
    return Py_NewRef(sig_cache[s].hit);
}

/* Keep `hit`, the memo's entry for op on these operands with these params (with a signature id). */
static void sig_cache_put(PyObject *op, Operands *o, PyObject *params, PyObject *hit)
{
    if (o->n > SIG_CACHE_OPERANDS)
        return;
    PyObject *copy = PyDict_Copy(params);  /* a caller's later write into its dict must not reach here */
    if (copy == NULL) {
        PyErr_Clear();  /* nothing cached: only slower */
        return;
    }
    size_t s = sig_cache_slot(op, o, params);
    Py_XSETREF(sig_cache[s].op, Py_NewRef(op));
    Py_XSETREF(sig_cache[s].params, copy);
    Py_XSETREF(sig_cache[s].hit, Py_NewRef(hit));
    for (Py_ssize_t i = 0; i < sig_cache[s].n; i++)
        Py_CLEAR(sig_cache[s].type_ids[i]);
    for (Py_ssize_t i = 0; i < o->n; i++)
        sig_cache[s].type_ids[i] = Py_NewRef(o->type_ids[i]);
    sig_cache[s].n = o->n;
}

/* A new PendingTensor (deferred.py), with the slots its __init__ sets. */
/* Whether `o` can lie on a reference cycle through a pending op that holds it: not when the
 * collector does not track it, nor for what refers to no later object (a Tensor, a Held, an
 * earlier PendingTensor), nor for a tuple of such things. */
static int acyclic(PyObject *o, int depth)
{
    if (!PyObject_GC_IsTracked(o))
        return 1;
    PyTypeObject *cls = Py_TYPE(o);
    if (cls == pending_type || cls == tensor_type || cls == held_type)
        return 1;
    if (!PyTuple_CheckExact(o) || depth > 2)
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
        if (!acyclic(PyTuple_GET_ITEM(o, i), depth + 1))
            return 0;
    return 1;
}

/* A long recording keeps every PendingTensor, its operands' container and its params alive;
 * tracked, they made every collection of the older generations walk them all (40% of recording
 * ADBench's LSTM at 1,024 steps, bench/tape_recording.py). A PendingTensor of an op (not a
 * callable) whose operands and params are `acyclic` can close no cycle, so the collector need
 * not see it: it is freed by its reference count, as before. */
static int untrack_if_acyclic(PyObject *t, PyObject *op, PyObject *args, PyObject *params)
{
    if (op_type == NULL || !Py_IS_TYPE(op, op_type))
        return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args);
    PyObject **items = PySequence_Fast_ITEMS(args);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!acyclic(items[i], 0))
            return 0;
    if (PyObject_GC_IsTracked(params)) {  /* (an untracked dict holds nothing the collector tracks) */
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(params, &pos, &key, &value))
            if (!acyclic(value, 0))
                return 0;
        PyObject_GC_UnTrack(params);  /* a dict tracks itself again if a tracked value is put in */
    }
    if (PyObject_GC_IsTracked(args))
        PyObject_GC_UnTrack(args);  /* the operands' tuple or private list: never changed */
    if (PyObject_GC_IsTracked(t))
        PyObject_GC_UnTrack(t);
    return 1;
}

/* The shape and dtype of recent result types (ir.TensorType: immutable, and kept alive here),
 * by address: reading them through GetAttr was 3% of recording ADBench's LSTM. */
#define TYPE_CACHE_SIZE 64
static struct {
    PyObject *type, *shape, *dtype;
} type_cache[TYPE_CACHE_SIZE];

/* shape_and_dtype of an op's result type, through type_cache. */
static int type_shape_and_dtype(PyObject *type, PyObject **shape, PyObject **dtype)
{
    size_t slot = ((size_t)type >> 4) % TYPE_CACHE_SIZE;
    if (type_cache[slot].type == type) {
        *shape = Py_NewRef(type_cache[slot].shape);
        *dtype = Py_NewRef(type_cache[slot].dtype);
        return 0;
    }
    if (shape_and_dtype(type, shape, dtype) < 0)
        return -1;
    Py_XSETREF(type_cache[slot].type, Py_NewRef(type));
    Py_XSETREF(type_cache[slot].shape, Py_NewRef(*shape));
    Py_XSETREF(type_cache[slot].dtype, Py_NewRef(*dtype));
    return 0;
}

static PyObject *new_pending(PyObject *op, PyObject *args, PyObject *params, PyObject *type)
{
    PyObject *shape, *dtype;
    if (type_shape_and_dtype(type, &shape, &dtype) < 0)
        return NULL;
    /* made untracked (tp_alloc would track it, and most are untracked at once: linking it into
     * the collector's list and out again wrote the headers of its neighbours there), tracked
     * below when it can lie on a cycle */
    PyObject *t = (PyObject *)PyObject_GC_New(PyObject, pending_type);
    if (t == NULL) {
        Py_DECREF(shape);
        Py_DECREF(dtype);
        return NULL;
    }
    memset((char *)t + sizeof(PyObject), 0, (size_t)pending_type->tp_basicsize - sizeof(PyObject));
    Py_INCREF(Py_None);
    SLOT(t, off_sym) = Py_None;
    Py_INCREF(op);
    SLOT(t, off_op) = op;
    Py_INCREF(args);
    SLOT(t, off_args) = args;
    Py_INCREF(params);
    SLOT(t, off_params) = params;
    Py_INCREF(Py_None);
    SLOT(t, off_forced) = Py_None;
    Py_INCREF(Py_None);
    SLOT(t, off_keep) = Py_None;
    SLOT(t, off_shape) = shape;  /* references handed over */
    SLOT(t, off_dtype) = dtype;
    if (!untrack_if_acyclic(t, op, args, params))
        PyObject_GC_Track(t);
    return t;
}

/* args with each Variable replaced by the array it holds now (what a pending op must see). */
static PyObject *variables_read(PyObject *args)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args);
    PyObject **items = PySequence_Fast_ITEMS(args);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = items[i];
        PyObject *v;
        if (Py_IS_TYPE(a, variable_type)) {
            v = SLOT(a, off_value);
            if (v == NULL) {
                Py_DECREF(out);
                PyErr_SetString(PyExc_AttributeError, "a Variable without a value");
                return NULL;
            }
            Py_INCREF(v);
        } else {
            Py_INCREF(a);
            v = a;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

/* recording.held_operands: `args` (a pending op's operands) with each array in `held` (id ->
 * Held), or Tensor (not pending) holding one, replaced by its Held: a new list, or `args` itself
 * (a new reference) when none is held: most ops read only pending values, and a list per op
 * was 2% of recording ADBench's LSTM once its data rows were held. */
static PyObject *held_operands(PyObject *held, PyObject *args)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args);
    PyObject **items = PySequence_Fast_ITEMS(args);
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = items[i], *h = NULL;
        PyTypeObject *cls0 = Py_TYPE(a);
        if (cls0 == pending_type)  /* its value is computed by gradtape: no array to check */
            continue;
        /* a Tensor is no array: only the array it holds can be held (the keys are live arrays' ids) */
        int first = cls0 == tensor_type;
        if (first)
            a = SLOT(a, off_value);
        for (int pass = first; pass < 2 && h == NULL && a != NULL; pass++) {
            PyObject *key = PyLong_FromVoidPtr(a);
            if (key == NULL) {
                Py_XDECREF(out);
                return NULL;
            }
            h = PyDict_GetItemWithError(held, key);
            Py_DECREF(key);
            if (h == NULL && PyErr_Occurred()) {
                Py_XDECREF(out);
                return NULL;
            }
            /* then the array a Tensor holds (a pending one's is not computed yet) */
            PyTypeObject *cls = Py_TYPE(a);
            a = pass == 0 && cls != pending_type && PyType_IsSubtype(cls, tensor_type) ? SLOT(a, off_value) : NULL;
        }
        if (h == NULL)
            continue;
        if (out == NULL) {  /* the first held operand: from here a copy */
            out = PyList_New(n);
            if (out == NULL)
                return NULL;
            for (Py_ssize_t k = 0; k < n; k++)
                PyList_SET_ITEM(out, k, Py_NewRef(items[k]));
        }
        PyObject *was = PyList_GET_ITEM(out, i);
        PyList_SET_ITEM(out, i, Py_NewRef(h));
        Py_DECREF(was);
    }
    return out != NULL ? out : Py_NewRef(args);
}

/* The position of a read of Variable `a` when the read is tracked already (watched, and not
 * assigned since): a new reference; NULL with no error set when it is not; NULL with an error. */
static PyObject *variable_position(PyObject *rec, PyObject *var_of, PyObject *a)
{
    PyObject *p = var_position(var_of, a);
    if (p == NULL)
        return NULL;
    PyObject *key = PyLong_FromVoidPtr(a), *versions = SLOT(rec, off_versions);
    PyObject *seen = NULL, *version = SLOT(a, off_version);
    if (key != NULL && versions != NULL && PyDict_Check(versions) && version != NULL)
        seen = PyDict_GetItemWithError(versions, key);
    Py_XDECREF(key);
    int same = seen == NULL ? 0 : PyObject_RichCompareBool(seen, version, Py_EQ);
    if (same != 1) {
        Py_DECREF(p);
        return NULL;  /* -1: the comparison's error is set; also when key failed */
    }
    return p;
}

/* Watch Variable `v` (id `key`, holding `array`) from here on: Recording._watch_variable.
 * Returns its new position (a new reference). */
static PyObject *watch_variable(PyObject *rec, PyObject *var_of, PyObject *v, PyObject *key, PyObject *array)
{
    PyObject *const_of = SLOT(rec, off_const_of), *sources = SLOT(rec, off_sources);
    PyObject *variables = SLOT(rec, off_variables), *versions = SLOT(rec, off_versions);
    PyObject *version = SLOT(v, off_version);
    if (!const_of || !sources || !variables || !versions || !version || !PyDict_Check(const_of) ||
        !PyDict_Check(sources) || !PyList_Check(variables) || !PyDict_Check(versions)) {
        PyErr_SetString(PyExc_TypeError, "_crecord: unexpected recording or variable state");
        return NULL;
    }
    if (PyDict_DelItem(const_of, key) < 0) {  /* its unwatched reads do not count */
        if (!PyErr_ExceptionMatches(PyExc_KeyError))
            return NULL;
        PyErr_Clear();
    }
    PyObject *p = new_leaf(rec, v, array, variable_kind);
    if (p == NULL || var_set(var_of, v, p) < 0)
        goto fail;
    PyObject *reads = PyDict_GetItemWithError(sources, key);
    if (reads != NULL) {
        if (!PyList_Check(reads) || PyList_Append(reads, p) < 0)
            goto fail;
    } else {
        PyObject *first = PyErr_Occurred() ? NULL : PyList_New(1);
        if (first == NULL)
            goto fail;
        Py_INCREF(p);
        PyList_SET_ITEM(first, 0, p);
        int err = PyDict_SetItem(sources, key, first) || PyList_Append(variables, v);
        Py_DECREF(first);
        if (err)
            goto fail;
    }
    if (PyDict_SetItem(versions, key, version) < 0)
        goto fail;
    return p;
fail:
    Py_XDECREF(p);
    return NULL;
}

/* The position of a read of Variable `a`, watching it first when it should be
 * (Recording._variable_read): a new reference; NULL with no error set when the read is not
 * tracked; NULL with an error. */
static PyObject *variable_read(PyObject *rec, PyObject *var_of, PyObject *a, PyObject *watch_reads)
{
    PyObject *p = variable_position(rec, var_of, a);
    if (p != NULL || PyErr_Occurred())
        return p;
    PyObject *sources = SLOT(rec, off_sources), *trainable = SLOT(a, off_trainable), *array = SLOT(a, off_value);
    if (sources == NULL || trainable == NULL || array == NULL || !PyDict_Check(sources)) {
        PyErr_SetString(PyExc_TypeError, "_crecord: unexpected recording or variable state");
        return NULL;
    }
    PyObject *key = PyLong_FromVoidPtr(a);
    if (key == NULL)
        return NULL;
    /* An explicitly watched variable stays watched after an assign, trainable or not. */
    int watch = PyObject_IsTrue(trainable);
    if (watch > 0)
        watch = PyObject_IsTrue(watch_reads);
    if (watch == 0)
        watch = PyDict_Contains(sources, key);
    int floating = 0;
    if (watch > 0) {  /* a variable of another dtype is watched, but its reads are not tracked */
        PyObject *dtype = PyObject_GetAttr(array, s_dtype);
        PyObject *kind = dtype == NULL ? NULL : PyObject_GetAttr(dtype, s_kind);
        Py_XDECREF(dtype);
        /* real or complex floating point: the dtypes gradients flow through */
        floating = kind == NULL ? -1 : PyUnicode_Check(kind) && (PyUnicode_CompareWithASCIIString(kind, "f") == 0 ||
                                                              PyUnicode_CompareWithASCIIString(kind, "c") == 0);
        Py_XDECREF(kind);
    }
    if (watch > 0 && floating > 0) {
        p = watch_variable(rec, var_of, a, key, array);
    } else if (watch > 0 && floating == 0) {  /* Recording.watch_integer_variable */
        PyObject *r = PyObject_CallFunctionObjArgs(py_watch_integer_variable, rec, a, NULL);
        Py_XDECREF(r);
    }
    Py_DECREF(key);
    return p;
}

/* Fill in inputs[i] and type_ids[i] for a Tensor constant already a leaf of this recording
 * (const_of: a constant used by an earlier op). Returns 1 when filled, 0 when Python must
 * make its leaf, -1 on error. */
static int known_constant(PyObject *rec, PyObject *info, PyObject *a, Operands *o, Py_ssize_t i)
{
    PyObject *const_of = SLOT(rec, off_const_of);
    if (const_of == NULL || !PyDict_Check(const_of))
        return 0;
    PyObject *p = position_of(const_of, a);
    if (p == NULL)
        return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(p);
    return set_input(info, o, i, p) < 0 ? -1 : 1;
}

/* Fill in inputs[i] and type_ids[i] for a Python float or int or a NumPy float64 operand
 * whose Literal the memo (recording._literals) holds, as recording.py's `_literal` would:
 * the key is (dtype, the value's 8 bytes). Returns 1 when filled, 0 when Python must do it,
 * -1 on error. */
static int scalar_literal(PyObject *rec, PyObject *a, Operands *o, Py_ssize_t i)
{
    PyTypeObject *cls = Py_TYPE(a);
    char bytes[8];
    PyObject *dtype;
    if (cls == &PyFloat_Type || cls == float64_type) {
        double d = PyFloat_AS_DOUBLE(a);
        memcpy(bytes, &d, 8);
        dtype = float64_dtype;
    } else if (cls == &PyLong_Type && int64_dtype != Py_None) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (overflow)
            return 0;
        int64_t x = (int64_t)v;
        memcpy(bytes, &x, 8);
        dtype = int64_dtype;
    } else {
        return 0;
    }
    PyObject *literals = SLOT(rec, off_literals);
    if (literals == NULL || !PyDict_Check(literals))
        return 0;
    PyObject *b = PyBytes_FromStringAndSize(bytes, 8);
    if (b == NULL)
        return -1;
    PyObject *key = PyTuple_Pack(2, dtype, b);
    Py_DECREF(b);
    if (key == NULL)
        return -1;
    PyObject *hit = PyDict_GetItemWithError(literals_memo, key);  /* (Literal, type id) */
    int filled = 0;
    if (hit != NULL && PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) == 2) {
        PyObject *tid = PyTuple_GET_ITEM(hit, 1);
        if (PyDict_SetItem(literals, key, PyTuple_GET_ITEM(hit, 0)) == 0) {
            operands_set(o, i, Py_NewRef(key), tid);
            filled = 1;
        } else {
            filled = -1;
        }
    } else if (PyErr_Occurred()) {
        filled = -1;
    }
    Py_DECREF(key);
    return filled;
}

/* The number of dimensions of an exact ndarray; -1 for anything else; -2 on error. */
static int array_ndim(PyObject *a)
{
    if (!Py_IS_TYPE(a, ndarray_type))
        return -1;
    PyObject *shape = PyObject_GetAttr(a, s_shape);
    if (shape == NULL)
        return -2;
    int nd = PyTuple_Check(shape) ? (int)PyTuple_GET_SIZE(shape) : -1;
    Py_DECREF(shape);
    return nd;
}

/* The positions of the results record_impl made last, by the result's address: an operand is
 * most often a result recorded a few ops before, and var_of's lookup (an int made from its
 * address, hashed, and compared with the key's int) was the largest cost of recording ADBench's
 * LSTM left. An entry holds no reference: it is used only when the recording's `values` still
 * holds that very object at that position (so it is alive, and the same object) and `info` says
 * an op made it (an op's result is always in var_of at its position: rebind.py, which moves
 * tensors between positions, replaces them in `values` too). A freed recording's entries are
 * dropped (`forget`), so that none passes for one of a new recording made at its address. */
#define RECENT_SIZE 1024
static struct {
    PyObject *obj, *rec;
    Py_ssize_t position;
} recent[RECENT_SIZE];

static size_t recent_slot(PyObject *obj)
{
    return (size_t)((((size_t)obj >> 4) * 0x9E3779B97F4A7C15ull) >> 54) % RECENT_SIZE;
}

/* untrack_held(h): take a new Held (held_arrays.py) and its `site` tuple off the collector's lists.
 * A recording holds one per NumPy array its owner can still write (an LSTM step's two data rows),
 * and they live as long as the recording: thousands of tracked survivors per long recording,
 * which set off a full collection about once per recording of ADBench's LSTM over 1,024
 * characters (13 ms each: it walks the recording). A Held refers to an array, an op, a (code,
 * offset) pair and a fingerprint of shapes, dtypes and bytes: nothing that can refer back to it,
 * so it can close no cycle, and its reference count frees it as before. */
static void held_off_the_collector(PyObject *h, PyObject *site)
{
    if (PyTuple_CheckExact(site) && PyObject_GC_IsTracked(site))
        PyObject_GC_UnTrack(site);
    if (PyObject_GC_IsTracked(h))
        PyObject_GC_UnTrack(h);
}

static PyObject *untrack_held(PyObject *module, PyObject *h)
{
    if (held_type == NULL || !Py_IS_TYPE(h, held_type)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.untrack_held takes a Held (after setup)");
        return NULL;
    }
    PyObject *site = PyObject_GetAttrString(h, "site");
    if (site == NULL)
        return NULL;
    held_off_the_collector(h, site);
    Py_DECREF(site);
    Py_RETURN_NONE;
}

/* forget(recording): drop the entries of a recording being freed (Recording.__del__), before
 * another can be made at its address, where an entry could otherwise pass for one of its own. */
static void release_structure(PyObject *rec);

static PyObject *forget(PyObject *module, PyObject *rec)
{
    for (int s = 0; s < RECENT_SIZE; s++)
        if (recent[s].rec == rec)
            recent[s].obj = recent[s].rec = NULL;
    if (recording_type != NULL && PyObject_TypeCheck(rec, recording_type))
        release_structure(rec);
    Py_RETURN_NONE;
}

/* var_of.get(id(a)) for a Tensor operand of `rec`, as a new reference (NULL when absent; check
 * PyErr_Occurred). */
static PyObject *operand_position(PyObject *rec, PyObject *var_of, PyObject *a)
{
    size_t s = recent_slot(a);
    if (recent[s].obj == a && recent[s].rec == rec) {
        PyObject *values = SLOT(rec, off_values), *info = SLOT(rec, off_info);
        Py_ssize_t p = recent[s].position;
        if (values != NULL && info != NULL && PyList_Check(values) && PyList_Check(info) &&
            p < PyList_GET_SIZE(values) && p < PyList_GET_SIZE(info) && PyList_GET_ITEM(values, p) == a) {
            PyObject *entry = PyList_GET_ITEM(info, p);
            if (PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 5)
                return position_int(p);
        }
    }
    return var_position(var_of, a);
}

/* --- Holding a NumPy array its owner can still write (held_arrays.py) ----------------------
 *
 * `hold` in Python cost about 2.5 us per array in a recording (ADBench's LSTM holds two data
 * rows per character: a tenth of recording it). `hold_fast` does what held_arrays.hold does for
 * its common case, step for step: an exact ndarray, writeable itself (so `may_change` is true),
 * of at most EXACT_BYTES (its fingerprint is its shape, dtype and bytes); anything else is left
 * to Python. The Held is made with its slots set (as Held.__init__ sets them) and is off the
 * collector's lists, as `untrack_held` leaves it. tests/tracer/test_modified_arrays.py checks
 * both paths against in-place writes, and tests/tracer/test_crecord.py the Helds they make. */
static PyObject *s_flags, *s_writeable, *s_nbytes, *s_tobytes, *s_f_code, *s_f_lasti, *s_f_back, *s_co_filename;

/* held_arrays._user_site: (code, instruction offset) of the innermost frame outside gradtape and
 * NumPy, or None; the frames' `f_code` and `f_lasti` are read as Python reads them. The frame
 * running now is the one that called into C (the user's, or a gradtape function's). */
static PyObject *user_site(void)
{
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    while (f != NULL) {
        PyObject *code = PyObject_GetAttr((PyObject *)f, s_f_code);
        PyObject *filename = code == NULL ? NULL : PyObject_GetAttr(code, s_co_filename);
        int internal = filename == NULL ? -1 : 0;
        for (Py_ssize_t i = 0; internal == 0 && i < PyTuple_GET_SIZE(internal_dirs); i++) {
            Py_ssize_t r = PyUnicode_Tailmatch(filename, PyTuple_GET_ITEM(internal_dirs, i), 0, PY_SSIZE_T_MAX, -1);
            internal = r < 0 ? -1 : (int)r;
        }
        Py_XDECREF(filename);
        if (internal < 0) {
            Py_XDECREF(code);
            Py_DECREF(f);
            return NULL;
        }
        if (!internal) {
            PyObject *lasti = PyObject_GetAttr((PyObject *)f, s_f_lasti);
            Py_DECREF(f);
            PyObject *site = lasti == NULL ? NULL : PyTuple_Pack(2, code, lasti);
            Py_DECREF(code);
            Py_XDECREF(lasti);
            return site;
        }
        Py_DECREF(code);
        PyObject *back = PyObject_GetAttr((PyObject *)f, s_f_back);  /* (PyFrame_GetBack is not in 3.10's Python.h) */
        Py_DECREF(f);
        if (back == NULL)
            return NULL;
        if (back == Py_None) {
            Py_DECREF(back);
            break;
        }
        f = (PyFrameObject *)back;
    }
    Py_RETURN_NONE;
}

/* Hold array `a`, which `op` reads, on recording `rec` (held_arrays.hold) when it is the common
 * case: 1 when done (held now, or already), 0 when Python's hold must decide, -1 on error. */
static int hold_fast(PyObject *rec, PyObject *a, PyObject *op)
{
    if (held_type == NULL || internal_dirs == NULL || !PyTuple_Check(internal_dirs) || held_exact_bytes == NULL ||
        !PyLong_Check(held_exact_bytes) || off_held_fingerprint <= 0 || !Py_IS_TYPE(a, ndarray_type))
        return 0;
    PyObject *held = SLOT(rec, off_held);
    if (held == NULL || !PyDict_CheckExact(held))
        return 0;
    PyObject *key = PyLong_FromVoidPtr(a);
    if (key == NULL)
        return -1;
    int done = -1;
    PyObject *flags = NULL, *writeable = NULL, *nbytes = NULL, *shape = NULL, *dtype = NULL, *bytes = NULL;
    PyObject *fingerprint = NULL, *site = NULL, *h = NULL;
    int has = PyDict_Contains(held, key);
    if (has != 0) {  /* held already (the first read's fingerprint stays), or an error */
        done = has < 0 ? -1 : 1;
        goto end;
    }
    if ((flags = PyObject_GetAttr(a, s_flags)) == NULL || (writeable = PyObject_GetAttr(flags, s_writeable)) == NULL)
        goto end;
    int w = PyObject_IsTrue(writeable);
    if (w <= 0) {  /* not writeable itself: whether a base is, Python's may_change says */
        done = w < 0 ? -1 : 0;
        goto end;
    }
    if ((nbytes = PyObject_GetAttr(a, s_nbytes)) == NULL)
        goto end;
    int small = PyObject_RichCompareBool(nbytes, held_exact_bytes, Py_LE);
    if (small <= 0) {  /* a large one's fingerprint is sampled: Python's */
        done = small < 0 ? -1 : 0;
        goto end;
    }
    if ((shape = PyObject_GetAttr(a, s_shape)) == NULL || (dtype = PyObject_GetAttr(a, s_dtype)) == NULL ||
        (bytes = PyObject_CallMethodNoArgs(a, s_tobytes)) == NULL ||
        (fingerprint = PyTuple_Pack(3, shape, dtype, bytes)) == NULL || (site = user_site()) == NULL ||
        (h = held_type->tp_alloc(held_type, 0)) == NULL)
        goto end;
    SLOT(h, off_held_array) = Py_NewRef(a);
    SLOT(h, off_held_op) = Py_NewRef(op);
    SLOT(h, off_held_site) = Py_NewRef(site);
    SLOT(h, off_held_fingerprint) = Py_NewRef(fingerprint);
    held_off_the_collector(h, site);  /* it can close no cycle (see untrack_held) */
    if (PyDict_SetItem(held, key, h) < 0)
        goto end;
    done = 1;
end:
    Py_DECREF(key);
    Py_XDECREF(flags);
    Py_XDECREF(writeable);
    Py_XDECREF(nbytes);
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    Py_XDECREF(bytes);
    Py_XDECREF(fingerprint);
    Py_XDECREF(site);
    Py_XDECREF(h);
    return done;
}

/* `hint`, when not NULL, is the caller's memo of this op's signature for a single operand: NULL
 * or a (type id, signature memo entry) tuple. When the operand's type id is that one (the same
 * object), its entry is used without building the memo's key; otherwise the entry found is
 * stored there for the next call. The caller must pass the same op and equal params each time. */
static PyObject *record_impl(PyObject *rec, PyObject *op, PyObject *args, PyObject *params, PyObject *result,
                             PyObject *watch_reads, PyObject **hint)
{
    PyObject *var_of = rec_slot(rec, off_var_of, "var_of", 0);
    PyObject *info = rec_slot(rec, off_info, "info", 1);
    if (var_of == NULL || info == NULL)
        return NULL;
    if (!(Py_IS_TYPE(var_of, &id_positions_type) || PyDict_Check(var_of)) || !PyList_Check(info) ||
        !PyDict_Check(params)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.record: unexpected recording state");
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args);
    PyObject **items = PySequence_Fast_ITEMS(args);

    /* A class this file does not know: the Python method decides, before anything is recorded. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *cls = Py_TYPE(items[i]);
        if (cls != pending_type && cls != tensor_type && cls != variable_type && PyType_IsSubtype(cls, tensor_type))
            return PyObject_CallFunctionObjArgs(py_record, rec, op, args, params, result, watch_reads, NULL);
    }

    Operands o;
    if (operands_init(&o, n) < 0)
        return NULL;
    /* held: the Python called below (watching, constants, shape rules) must not free them */
    Py_INCREF(var_of);
    Py_INCREF(info);
    PyObject *ret = NULL, *inputs = NULL, *type_ids = NULL;
    PyObject *hit = NULL, *entry = NULL, *position = NULL, *pending_args = NULL;
    int tracked = 0, reads_variable = 0, untracked = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = items[i];
        PyTypeObject *cls = Py_TYPE(a);
        PyObject *p = NULL;  /* a new reference, or NULL: untracked */
        if (cls == pending_type) {
            p = operand_position(rec, var_of, a);
        } else if (cls == variable_type) {
            p = variable_read(rec, var_of, a, watch_reads);
            reads_variable = 1;
        } else if (cls == tensor_type) {
            if (SLOT(a, off_sym) != NULL && SLOT(a, off_sym) != Py_None) {
                ret = Py_None;  /* abstract: bind traces the op */
                Py_INCREF(ret);
                goto done;
            }
            p = operand_position(rec, var_of, a);
        }
        if (p == NULL && PyErr_Occurred())
            goto done;
        if (p == NULL) {
            untracked = 1;
            continue;
        }
        tracked = 1;
        if (set_input(info, &o, i, p) < 0)
            goto done;
    }
    if (!tracked) {
        ret = Py_None;
        Py_INCREF(ret);
        goto done;
    }
    if (untracked) {
        /* Arrays (not 0-d) become leaves here when they are the only untracked operands;
         * otherwise Python makes every constant, in operand order, as recording.py does. */
        int plain = 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (o.inputs[i] != Py_None)
                continue;
            int filled = Py_IS_TYPE(items[i], tensor_type) ? known_constant(rec, info, items[i], &o, i)
                                                           : scalar_literal(rec, items[i], &o, i);
            if (filled < 0)
                goto done;
        }
        for (Py_ssize_t i = 0; i < n && plain; i++) {
            if (o.inputs[i] != Py_None)
                continue;
            int nd = array_ndim(items[i]);
            if (nd < -1)
                goto done;
            plain = nd > 0;
        }
        for (Py_ssize_t i = 0; i < n && plain; i++) {
            if (o.inputs[i] != Py_None)
                continue;
            PyObject *p = new_leaf(rec, items[i], items[i], constant_kind);
            if (p == NULL || set_input(info, &o, i, p) < 0)
                goto done;
            int held_now = hold_fast(rec, items[i], op);
            if (held_now < 0)
                goto done;
            if (held_now == 0) {
                PyObject *r = PyObject_CallFunctionObjArgs(py_hold, rec, items[i], op, NULL);
                if (r == NULL)
                    goto done;
                Py_DECREF(r);
            }
        }
        if (!plain) {
            if (operands_lists(&o, &inputs, &type_ids) < 0)
                goto done;
            PyObject *r = PyObject_CallMethodObjArgs(rec, s_constants, op, args, inputs, type_ids, NULL);
            if (r == NULL || operands_from_lists(&o, inputs, type_ids) < 0) {
                Py_XDECREF(r);
                goto done;
            }
            Py_DECREF(r);
        }
    }

    /* The signature memo: (result type, type id, signature id, op, params). */
    if (hint != NULL && *hint != NULL && n == 1 && o.type_ids[0] == PyTuple_GET_ITEM(*hint, 0)) {
        hit = Py_NewRef(PyTuple_GET_ITEM(*hint, 1));
    } else if ((hit = sig_cache_get(op, &o, params)) == NULL) {
        PyObject *key = signature_key(op, &o, params);
        if (key == NULL)
            goto done;
        hit = PyDict_GetItemWithError(signatures_memo, key);
        Py_DECREF(key);
        if (hit != NULL) {
            Py_INCREF(hit);
        } else {
            if (PyErr_Occurred()) {
                if (!PyErr_ExceptionMatches(PyExc_TypeError))
                    goto done;
                PyErr_Clear();  /* an unhashable param: _signature says what the rule thinks of it */
            }
            PyObject *input_types = PyObject_GetAttr(rec, s_input_types);
            if (input_types == NULL || (inputs == NULL && operands_lists(&o, &inputs, &type_ids) < 0)) {
                Py_XDECREF(input_types);
                goto done;
            }
            hit = PyObject_CallFunctionObjArgs(py_signature, op, input_types, inputs, type_ids, params, NULL);
            Py_DECREF(input_types);
            if (hit == NULL)
                goto done;
        }
        if (!PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 5) {
            PyErr_SetString(PyExc_TypeError, "the signature memo's entry is not a 5-tuple");
            goto done;
        }
        if (PyTuple_GET_ITEM(hit, 2) != Py_None) {
            sig_cache_put(op, &o, params, hit);
            if (hint != NULL && n == 1) {
                PyObject *pair = PyTuple_Pack(2, o.type_ids[0], hit);
                if (pair == NULL)
                    goto done;
                Py_XSETREF(*hint, pair);
            }
        }
    }

    if (result == Py_None) {
        PyObject *seen = args;
        if (reads_variable) {  /* the pending op must see the array the variable holds now */
            pending_args = variables_read(args);
            if (pending_args == NULL)
                goto done;
            seen = pending_args;
        }
        PyObject *held = SLOT(rec, off_held);
        if (held != NULL && PyDict_Check(held) && PyDict_GET_SIZE(held) > 0) {  /* checked when computed */
            PyObject *checked = held_operands(held, seen);
            if (checked == NULL)
                goto done;
            Py_XSETREF(pending_args, checked);
            seen = pending_args;
        }
        result = new_pending(op, seen, params, PyTuple_GET_ITEM(hit, 0));
        if (result == NULL)
            goto done;
        Py_INCREF(Py_True);
        Py_XSETREF(SLOT(rec, off_deferred), Py_True);
    } else {
        Py_INCREF(result);
    }
    /* from here `result` is a reference we own */

    PyObject *sig_id = PyTuple_GET_ITEM(hit, 2);
    if (sig_id != Py_None) {
        entry = PyTuple_New(1 + n);
        if (entry != NULL) {
            int ints = 1;
            PyTuple_SET_ITEM(entry, 0, Py_NewRef(sig_id));
            for (Py_ssize_t i = 0; i < n; i++) {
                ints &= PyLong_CheckExact(o.inputs[i]);
                PyTuple_SET_ITEM(entry, 1 + i, Py_NewRef(o.inputs[i]));
            }
            /* ints refer to nothing: the collector need not walk the entry (it would untrack it
             * itself, after walking it once) */
            if (ints && PyLong_CheckExact(sig_id))
                PyObject_GC_UnTrack(entry);
        }
    } else {
        if (inputs == NULL && operands_lists(&o, &inputs, &type_ids) < 0) {
            Py_DECREF(result);
            goto done;
        }
        entry = PyObject_CallMethodObjArgs(rec, s_structure_entry, op, params, inputs, hit, NULL);
    }
    /* read after the last Python this op calls (_structure_entry) */
    PyObject *structure = rec_slot(rec, off_structure, "structure", 1);
    PyObject *values = rec_slot(rec, off_values, "values", 1);
    if (structure == NULL || values == NULL) {
        Py_DECREF(result);
        goto done;
    }
    position = position_int(PyList_GET_SIZE(structure));
    int err = entry == NULL || position == NULL || var_set(var_of, result, position) ||
              append_growing(structure, entry) || append_growing(info, hit) || append_growing(values, result);
    if (err) {
        Py_DECREF(result);
        goto done;
    }
    size_t slot = recent_slot(result);
    recent[slot].obj = result;
    recent[slot].rec = rec;
    recent[slot].position = PyList_GET_SIZE(structure) - 1;
    ret = result;

done:
    operands_clear(&o);
    Py_DECREF(var_of);
    Py_DECREF(info);
    Py_XDECREF(inputs);
    Py_XDECREF(type_ids);
    Py_XDECREF(hit);
    Py_XDECREF(entry);
    Py_XDECREF(position);
    Py_XDECREF(pending_args);
    return ret;
}

static PyObject *record(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 6) {
        PyErr_SetString(PyExc_TypeError, "record(recording, op, args, params, result, watch_reads)");
        return NULL;
    }
    if (pending_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_crecord.setup has not been called");
        return NULL;
    }
    PyObject *rec = argv[0];
    if (!Py_IS_TYPE(rec, recording_type)) {  /* slots are read by offset: only a Recording will do */
        PyErr_Format(PyExc_TypeError, "record: expected a Recording, got %s", Py_TYPE(rec)->tp_name);
        return NULL;
    }
    /* a tuple: callbacks into Python cannot resize it under record_impl's feet */
    PyObject *args = PyTuple_Check(argv[2]) ? Py_NewRef(argv[2]) : PySequence_Tuple(argv[2]);
    if (args == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "record: args must be a sequence");
        }
        return NULL;
    }
    PyObject *out = record_impl(rec, argv[1], args, argv[3], argv[4], argv[5], NULL);
    Py_DECREF(args);
    return out;
}

/* What setup() takes, by name: where it goes and what it must be. */
enum kind { CLASS, DICT, ANY };
static const struct {
    const char *name;
    PyObject **target;
    enum kind kind;
} needed[] = {
    {"Recording", (PyObject **)&recording_type, CLASS},
    {"PendingTensor", (PyObject **)&pending_type, CLASS},
    {"Tensor", (PyObject **)&tensor_type, CLASS},
    {"Variable", (PyObject **)&variable_type, CLASS},
    {"ndarray", (PyObject **)&ndarray_type, CLASS},
    {"float64", (PyObject **)&float64_type, CLASS},
    {"signatures", &signatures_memo, DICT},
    {"types", &types_memo, DICT},
    {"literals", &literals_memo, DICT},
    {"record", &py_record, ANY},
    {"signature", &py_signature, ANY},
    {"type_of", &py_type_of, ANY},
    {"CONSTANT", &constant_kind, ANY},
    {"VARIABLE", &variable_kind, ANY},
    {"float64_dtype", &float64_dtype, ANY},
    {"int64_dtype", &int64_dtype, ANY},
    {"watch_integer_variable", &py_watch_integer_variable, ANY},
    {"hold", &py_hold, ANY},
    {"internal_dirs", &internal_dirs, ANY},
    {"held_exact_bytes", &held_exact_bytes, ANY},
    {"Op", (PyObject **)&op_type, CLASS},
    {"Held", (PyObject **)&held_type, CLASS},
};
#define N_NEEDED (sizeof(needed) / sizeof(needed[0]))


/* --- Freeing PendingTensors ----------------------------------------------------------------
 *
 * A long recording frees tens of thousands of PendingTensors at once (a step's loss and its
 * tape going away), and CPython's generic `subtype_dealloc` took about 420 instructions for
 * each (callgrind, ADBench's LSTM): it walks the class's bases twice, calls out to clear weak
 * references that are not there, and runs the trashcan, which defers objects in deep chains of
 * references to bound the C stack. `pending_dealloc` takes its place on the PendingTensor class
 * (`install_pending_dealloc`, from setup) and does what it does for these objects: clear the
 * slots of the class and its bases (all object references: checked at install), clear weak
 * references when there are some, and free. Deep chains (a loss reading the op before it, which
 * reads the one before, 60,000 deep) are freed in a loop: a PendingTensor whose last reference
 * goes while another is being freed is put on a stack and freed after it, not from inside it. */
#define MAX_CLEARED_SLOTS 16
static PyTypeObject *dealloc_type;   /* the class pending_dealloc was installed on */
static Py_ssize_t cleared_offsets[MAX_CLEARED_SLOTS];
static int n_cleared;
static PyObject **dealloc_stack;
static Py_ssize_t dealloc_len, dealloc_capacity;
static int dealloc_draining;

static void release_values(PyObject *values);

static void pending_free_one(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    if (PyObject_GC_IsTracked(self))
        PyObject_GC_UnTrack(self);
    /* a freed recording's values (keep_values): taken first, so that clearing the operands below
     * frees none of them, then freed in order after this one */
    PyObject *kept = NULL;
    if (off_keep > 0 && Py_TYPE(self) == pending_type) {
        kept = *(PyObject **)((char *)self + off_keep);
        *(PyObject **)((char *)self + off_keep) = NULL;
    }
    /* the list is a slot (Python 3.11), or before the object (3.12 and later: a negative offset;
     * PyObject_ClearWeakRefs finds it, and returns at once when it is empty) */
    Py_ssize_t weaklist = dealloc_type->tp_weaklistoffset;
    if (weaklist < 0 || *(PyObject **)((char *)self + weaklist) != NULL)
        PyObject_ClearWeakRefs(self);
    for (int i = 0; i < n_cleared; i++)
        Py_CLEAR(*(PyObject **)((char *)self + cleared_offsets[i]));
    type->tp_free(self);
    Py_DECREF(type);  /* instances of a heap type hold a reference to it */
    if (kept != NULL && kept != Py_None)
        release_values(kept);
}

static void pending_dealloc(PyObject *self)
{
    if (dealloc_draining) {  /* freed while another is: after it, by the loop below */
        if (dealloc_len == dealloc_capacity) {
            Py_ssize_t grown = dealloc_capacity ? 2 * dealloc_capacity : 256;
            PyObject **more = PyMem_Realloc(dealloc_stack, grown * sizeof(PyObject *));
            if (more == NULL) {  /* no memory for the stack: free it now, recursively */
                pending_free_one(self);
                return;
            }
            dealloc_stack = more;
            dealloc_capacity = grown;
        }
        if (PyObject_GC_IsTracked(self))  /* the collector must not meet it while it waits */
            PyObject_GC_UnTrack(self);
        dealloc_stack[dealloc_len++] = self;
        return;
    }
    dealloc_draining = 1;
    pending_free_one(self);
    while (dealloc_len > 0)
        pending_free_one(dealloc_stack[--dealloc_len]);
    dealloc_draining = 0;
}

/* Install pending_dealloc on `cls` (PendingTensor) when its instances are what it frees: every
 * slot of it and its bases an object reference (the offsets kept), a weak-reference list, no
 * __dict__, no __del__, a collected type, and `object` as the first base that is no Python class.
 * Otherwise (or when installed already) nothing changes. */
static int install_pending_dealloc(PyTypeObject *cls)
{
    if (dealloc_type != NULL)  /* once: a class setup is given later keeps CPython's */
        return 0;
    if (!(cls->tp_flags & Py_TPFLAGS_HEAPTYPE) || !(cls->tp_flags & Py_TPFLAGS_HAVE_GC) ||
        cls->tp_dictoffset != 0 || cls->tp_weaklistoffset == 0 || cls->tp_finalize != NULL ||
        cls->tp_del != NULL)
        return 0;
#ifdef Py_TPFLAGS_MANAGED_DICT
    if (cls->tp_flags & Py_TPFLAGS_MANAGED_DICT)
        return 0;
#endif
#ifdef Py_TPFLAGS_MANAGED_WEAKREF
    /* a weak-reference list before the object (3.12 and later) only when the flag says so */
    if (cls->tp_weaklistoffset < 0 && !(cls->tp_flags & Py_TPFLAGS_MANAGED_WEAKREF))
        return 0;
#else
    if (cls->tp_weaklistoffset < 0)
        return 0;
#endif
    int n = 0;
    PyTypeObject *base = cls;
    for (; base != &PyBaseObject_Type; base = base->tp_base) {
        if (base == NULL || !(base->tp_flags & Py_TPFLAGS_HEAPTYPE) || base->tp_dictoffset != 0 ||
            base->tp_finalize != NULL || base->tp_del != NULL)
            return 0;
        for (PyMemberDef *m = base->tp_members; m != NULL && m->name != NULL; m++) {
            if (m->type != T_OBJECT_EX || n == MAX_CLEARED_SLOTS)
                return 0;
            cleared_offsets[n++] = m->offset;
        }
    }
    n_cleared = n;
    dealloc_type = cls;
    cls->tp_dealloc = pending_dealloc;
    return 0;
}

/* The slots record() and bind() read by offset, by the key "Class.slot" under which
 * gradtape/tracer/c_view.py declares them (what each must hold is written there); setup()
 * takes that declaration as {key: (class, slot name)} and refuses one that differs. */
static const struct {
    const char *key;
    Py_ssize_t *offset;
} slots[] = {
    {"Tensor._sym", &off_sym},           {"Tensor._value", &off_value},
    {"Variable._version", &off_version}, {"Variable.trainable", &off_trainable},
    {"PendingTensor.shape", &off_shape}, {"PendingTensor.dtype", &off_dtype},
    {"PendingTensor._op", &off_op},      {"PendingTensor._args", &off_args},
    {"PendingTensor._params", &off_params}, {"PendingTensor._forced", &off_forced},
    {"PendingTensor._keep", &off_keep},
    {"Held.array", &off_held_array},     {"Held.op", &off_held_op},
    {"Held.site", &off_held_site},       {"Held._fingerprint", &off_held_fingerprint},
    {"Recording.var_of", &off_var_of},   {"Recording.info", &off_info},
    {"Recording.structure", &off_structure}, {"Recording.values", &off_values},
    {"Recording.leaves", &off_leaves},   {"Recording.deferred", &off_deferred},
    {"Recording.versions", &off_versions}, {"Recording.literals", &off_literals},
    {"Recording.const_of", &off_const_of}, {"Recording.sources", &off_sources},
    {"Recording.variables", &off_variables}, {"Recording.snapshots", &off_snapshots},
    {"Recording.held", &off_held},
};
#define N_SLOTS (sizeof(slots) / sizeof(slots[0]))

/* The offset of the slot declared under `key` ("Class.slot") in `declared` ({key: (class, slot
 * name)}). The objects C reads it from are checked against the class `given` under the name
 * "Class" (see `needed`), so that class must be the declared one or a subclass. */
static int declared_offset(PyObject *declared, const char *key, PyObject **given, Py_ssize_t *out)
{
    PyObject *entry = PyDict_GetItemString(declared, key);  /* borrowed */
    if (entry == NULL) {
        PyErr_Format(PyExc_KeyError, "_crecord.setup: the slot declaration (c_view.py) has no %s, which _crecord.c reads",
                     key);
        return -1;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2 || !PyType_Check(PyTuple_GET_ITEM(entry, 0)) ||
        !PyUnicode_Check(PyTuple_GET_ITEM(entry, 1))) {
        PyErr_Format(PyExc_TypeError, "_crecord.setup: slots[%s] must be a (class, slot name) pair", key);
        return -1;
    }
    PyTypeObject *cls = (PyTypeObject *)PyTuple_GET_ITEM(entry, 0);
    size_t prefix = strcspn(key, ".");
    PyObject *reader = NULL;
    for (size_t i = 0; i < N_NEEDED; i++)
        if (strlen(needed[i].name) == prefix && strncmp(needed[i].name, key, prefix) == 0)
            reader = given[i];
    if (reader == NULL || !PyType_Check(reader) || !PyType_IsSubtype((PyTypeObject *)reader, cls)) {
        PyErr_Format(PyExc_TypeError, "_crecord.setup: slots[%s] is declared on %s, which is not the class "
                     "given for it (nor a base of it)", key, cls->tp_name);
        return -1;
    }
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(entry, 1));
    if (name == NULL)
        return -1;
    return slot_offset(cls, name, out);
}

/* setup(names): a dict with every entry of `needed`, and "slots": the slot declaration
 * (c_view.slot_table). Everything is checked before anything is kept, so a failed call
 * leaves the previous setup in force. */
static PyObject *setup(PyObject *module, PyObject *names)
{
    if (!PyDict_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.setup takes a dict");
        return NULL;
    }
    PyObject *given[N_NEEDED];
    for (size_t i = 0; i < N_NEEDED; i++) {
        given[i] = PyDict_GetItemString(names, needed[i].name);  /* borrowed */
        if (given[i] == NULL) {
            PyErr_Format(PyExc_KeyError, "_crecord.setup: missing %s", needed[i].name);
            return NULL;
        }
        if ((needed[i].kind == CLASS && !PyType_Check(given[i])) ||
            (needed[i].kind == DICT && !PyDict_Check(given[i]))) {
            PyErr_Format(PyExc_TypeError, "_crecord.setup: %s must be a %s", needed[i].name,
                         needed[i].kind == CLASS ? "class" : "dict");
            return NULL;
        }
    }
    PyTypeObject *tensor = (PyTypeObject *)given[2];
    if (!PyType_IsSubtype((PyTypeObject *)given[1], tensor) || !PyType_IsSubtype((PyTypeObject *)given[3], tensor)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.setup: PendingTensor and Variable must be Tensors");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)given[5], &PyFloat_Type)) {  /* scalar_literal reads it as a float */
        PyErr_SetString(PyExc_TypeError, "_crecord.setup: float64 must be a subclass of float");
        return NULL;
    }
    PyObject *declared = PyDict_GetItemString(names, "slots");  /* borrowed */
    if (declared == NULL || !PyDict_Check(declared)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.setup: slots must be a dict (c_view.slot_table)");
        return NULL;
    }
    if (PyDict_GET_SIZE(declared) != (Py_ssize_t)N_SLOTS) {
        PyErr_Format(PyExc_ValueError, "_crecord.setup: the slot declaration (c_view.py) has %zd slots, "
                     "_crecord.c reads %zu; declare exactly the slots it reads", PyDict_GET_SIZE(declared),
                     (size_t)N_SLOTS);
        return NULL;
    }
    Py_ssize_t offsets[N_SLOTS];
    for (size_t i = 0; i < N_SLOTS; i++)
        if (declared_offset(declared, slots[i].key, given, &offsets[i]))
            return NULL;
    for (size_t i = 0; i < N_NEEDED; i++) {
        Py_INCREF(given[i]);
        Py_XSETREF(*needed[i].target, given[i]);
    }
    for (size_t i = 0; i < N_SLOTS; i++)
        *slots[i].offset = offsets[i];
    Py_RETURN_NONE;
}

/* fast_dealloc(): install pending_dealloc on the PendingTensor class given to setup; True when it
 * is in place (now or before), False when that class is not one it can free (see
 * install_pending_dealloc). recording.py calls it unless GRADTAPE_PURE_PYTHON is set. */
static PyObject *fast_dealloc(PyObject *module, PyObject *unused)
{
    if (pending_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_crecord.fast_dealloc: call setup first");
        return NULL;
    }
    if (install_pending_dealloc(pending_type) < 0)
        return NULL;
    return PyBool_FromLong(dealloc_type == pending_type);
}

/* --- bind ------------------------------------------------------------------------------ */

/* Set by setup_bind(): dispatch.py's thread-local tape stack, the deferred module (whose
 * `enabled` is read at every call: tests and users switch it), deferred.eager_only (which
 * reads the op's declared facts: this file knows no op) and _computed. */
static PyObject *stack_local, *deferred_module, *eager_only, *py_computed, *dispatch_module, *c_record;
static PyObject *impls, *py_asarray;  /* ir.op.impls, np.asarray */
static PyObject *deferrable;  /* op -> not eager_only(op), asked once per op (ops live as long as the program) */
static PyObject *s_tapes, *s_enabled, *s_tape, *s_watch, *s_record, *s_variable_reads, *s_defer_on_every;

/* Whether a VariableReads is active in this thread (tape_stack.local.variable_reads is not
 * empty: a custom_gradient function is running, which must see its Variable reads, so ops
 * reading a Variable go to dispatch._computed). 1, 0, or -1 with an error. */
/* module.name (a new reference): from the module's dict when it is there, which is where a plain
 * module attribute lives (set by the module or by a test's monkeypatch), without GetAttr's
 * machinery: bind reads two such flags per op. */
static PyObject *module_attr(PyObject *module, PyObject *name)
{
    if (PyModule_CheckExact(module)) {
        PyObject *v = PyDict_GetItemWithError(PyModule_GetDict(module), name);
        if (v != NULL)
            return Py_NewRef(v);
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(module, name);
}

static int variable_reads_active(void)
{
    PyObject *reads = PyObject_GetAttr(stack_local, s_variable_reads);
    if (reads == NULL)
        return -1;
    int active = PyObject_IsTrue(reads);
    Py_DECREF(reads);
    return active;
}

/* The answers of `deferrable` last read, by the op's address (an op's declared facts never
 * change; the entry holds the op): every bind asks. Emptied with `deferrable` (setup_bind). */
#define OP_CACHE_SIZE 64
static struct {
    PyObject *op;
    int deferrable;
} op_cache[OP_CACHE_SIZE];

static void op_cache_clear(void)
{
    for (int s = 0; s < OP_CACHE_SIZE; s++)
        Py_CLEAR(op_cache[s].op);
}

/* Whether bind may defer `op` now: deferral is on and eager_only(op) is false. -1 on error. */
static int deferrable_now(PyObject *op)
{
    PyObject *enabled = module_attr(deferred_module, s_enabled);
    if (enabled == NULL)
        return -1;
    int on = PyObject_IsTrue(enabled);
    Py_DECREF(enabled);
    if (on <= 0)
        return on;
    size_t slot = ((size_t)op >> 4) % OP_CACHE_SIZE;
    if (op_cache[slot].op == op)
        return op_cache[slot].deferrable;
    PyObject *known = PyDict_GetItemWithError(deferrable, op);
    if (known != NULL) {
        Py_XSETREF(op_cache[slot].op, Py_NewRef(op));
        op_cache[slot].deferrable = known == Py_True;
        return known == Py_True;
    }
    if (PyErr_Occurred())
        return -1;
    PyObject *answer = PyObject_CallOneArg(eager_only, op);
    if (answer == NULL)
        return -1;
    int eager = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    if (eager < 0 || PyDict_SetItem(deferrable, op, eager ? Py_False : Py_True) < 0)
        return -1;
    return !eager;
}

/* GradientTape and the offsets of its `_tape` and `_watch_accessed_variables` slots, set by
 * setup_tape (gradient_tape.py calls it): bind reads them on every op, and as attributes they
 * were 200 instructions of each. NULL until then (and for other recorders): read as attributes. */
static PyTypeObject *tape_type;
static Py_ssize_t off_tape_recording, off_tape_watch;

/* setup_tape(GradientTape): its slots, as slot_offset finds them (an error if they are none). */
static PyObject *setup_tape(PyObject *module, PyObject *cls)
{
    Py_ssize_t rec_off, watch_off;
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.setup_tape takes the GradientTape class");
        return NULL;
    }
    if (slot_offset((PyTypeObject *)cls, "_tape", &rec_off) < 0 ||
        slot_offset((PyTypeObject *)cls, "_watch_accessed_variables", &watch_off) < 0)
        return NULL;
    Py_XSETREF(tape_type, (PyTypeObject *)Py_NewRef(cls));
    off_tape_recording = rec_off;
    off_tape_watch = watch_off;
    Py_RETURN_NONE;
}

/* The recording and watch flag of the single tape in `tapes` (the thread's tape list):
 * returns 1 with new references in *rec and *watch, 0 when there is not exactly one, -1 on error. */
static int single_tape(PyObject *tapes, PyObject **rec, PyObject **watch)
{
    if (PyList_GET_SIZE(tapes) != 1)
        return 0;
    PyObject *tape = PyList_GET_ITEM(tapes, 0);
    if (tape_type != NULL && Py_IS_TYPE(tape, tape_type)) {  /* exactly a GradientTape: by offset */
        PyObject *r = SLOT(tape, off_tape_recording), *w = SLOT(tape, off_tape_watch);
        if (r != NULL && w != NULL) {
            *rec = Py_NewRef(r);
            *watch = Py_NewRef(w);
            return 1;
        }
    }
    Py_INCREF(tape);
    *rec = PyObject_GetAttr(tape, s_tape);
    *watch = *rec == NULL ? NULL : PyObject_GetAttr(tape, s_watch);
    Py_DECREF(tape);
    if (*watch != NULL)
        return 1;
    Py_CLEAR(*rec);
    return -1;
}

/* A new Tensor holding `out` as an array (Tensor.__init__(out)). */
static PyObject *new_tensor(PyObject *out)
{
    PyObject *value = Py_IS_TYPE(out, ndarray_type) ? Py_NewRef(out)
                                                    : PyObject_CallOneArg(py_asarray, out);
    if (value == NULL)
        return NULL;
    PyObject *t = tensor_type->tp_alloc(tensor_type, 0);
    if (t == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    SLOT(t, off_value) = value;  /* reference handed over */
    SLOT(t, off_sym) = Py_NewRef(Py_None);
    return t;
}

/* dispatch._computed for its common case: concrete Tensors (not pending), Variables, arrays
 * and scalars, computed by the op's NumPy reference; then every recording tape records it.
 * Anything else, and any error of the reference (whose message _computed improves), goes to
 * _computed itself. `tapes` is the thread's tape list (borrowed). */
static PyObject *computed(PyObject *op, PyObject *args, PyObject *params, PyObject *tapes)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *values = PyTuple_New(n), *impl = NULL, *out = NULL, *result = NULL;
    if (values == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i), *v = a;
        PyTypeObject *cls = Py_TYPE(a);
        if (cls == tensor_type || cls == variable_type) {
            v = SLOT(a, off_value);
            if (v == NULL || SLOT(a, off_sym) != Py_None)  /* abstract (or unset): Python decides */
                goto python;
            if (cls == variable_type) {
                int watched = variable_reads_active();
                if (watched < 0)
                    goto done;
                if (watched)
                    goto python;
            }
        } else if (PyType_IsSubtype(cls, tensor_type)) {  /* pending, or a subclass */
            goto python;
        }
        PyTuple_SET_ITEM(values, i, Py_NewRef(v));
    }
    impl = PyDict_GetItemWithError(impls, op);
    if (impl == NULL) {
        if (PyErr_Occurred())
            goto done;
        goto python;
    }
    out = PyObject_Call(impl, values, params);
    if (out == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            goto done;  /* KeyboardInterrupt and friends: not retried */
        PyErr_Clear();
        goto python;
    }
    result = new_tensor(out);
    if (result == NULL)
        goto done;
    for (Py_ssize_t t = 0; t < PyList_GET_SIZE(tapes); t++) {
        PyObject *r = PyObject_CallMethodObjArgs(PyList_GET_ITEM(tapes, t), s_record, op, args, params, result,
                                                 NULL);
        if (r == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        Py_DECREF(r);
    }
    goto done;
python:
    result = PyObject_CallFunctionObjArgs(py_computed, op, args, params, NULL);
done:
    Py_DECREF(values);
    Py_XDECREF(out);
    return result;
}

/* stack_local.tapes, this thread's tape list (a new reference). tape_stack.py makes it once per
 * thread and only ever changes it in place, so it is kept here for the thread last asked about,
 * by the thread's id (PyThreadState_GetID: never reused, unlike a thread state's address): the
 * thread-local lookup was about 350 instructions of every bind. */
static PyObject *tapes_owner, *tapes_of_thread;  /* the stack_local they were read from; the list */
static uint64_t tapes_thread = (uint64_t)-1;

static PyObject *current_tapes(void)
{
    uint64_t thread = PyThreadState_GetID(PyThreadState_Get());
    if (thread == tapes_thread && tapes_owner == stack_local && tapes_of_thread != NULL)
        return Py_NewRef(tapes_of_thread);
    PyObject *tapes = PyObject_GetAttr(stack_local, s_tapes);
    if (tapes == NULL || !PyList_CheckExact(tapes))
        return tapes;  /* not a list: never cached (bind takes the general path) */
    Py_XSETREF(tapes_of_thread, Py_NewRef(tapes));
    Py_XSETREF(tapes_owner, Py_NewRef(stack_local));
    tapes_thread = thread;
    return tapes;
}

/* The params of every op bound without keyword arguments (a new reference): one empty dict, as
 * params are read-only (ir/core.py's Eqn; the signature memo already shares the first params
 * of each signature). A dict per op was 64 bytes a pending op kept and an allocation the
 * collector counted. Should anything write into it, the next bind raises rather than let
 * every later op carry the entry. */
static PyObject *no_params;

static PyObject *shared_no_params(void)
{
    if (no_params == NULL && (no_params = PyDict_New()) == NULL)
        return NULL;
    if (PyDict_GET_SIZE(no_params) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "gradtape: the shared empty params of ops bound without keyword "
                        "arguments were modified (an op's params must never be written)");
        return NULL;
    }
    return Py_NewRef(no_params);
}

/* bind(op, *args, **params): dispatch.bind, the entry point of every op (see dispatch.py). */
static PyObject *bind(PyObject *module, PyObject *const *argv, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "bind() missing required argument: 'op'");
        return NULL;
    }
    if (py_computed == NULL || pending_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_crecord.setup and setup_bind have not been called");
        return NULL;
    }
    PyObject *op = argv[0], *result = NULL, *rec = NULL, *watch = NULL, *tapes = NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *args = PyTuple_New(nargs - 1), *params = nkw ? PyDict_New() : shared_no_params();
    if (args == NULL || params == NULL)
        goto done;
    for (Py_ssize_t i = 1; i < nargs; i++) {
        Py_INCREF(argv[i]);
        PyTuple_SET_ITEM(args, i - 1, argv[i]);
    }
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyDict_SetItem(params, PyTuple_GET_ITEM(kwnames, i), argv[nargs + i]) < 0)
            goto done;
    tapes = current_tapes();
    if (tapes == NULL)
        goto done;
    if (!PyList_Check(tapes)) {
        result = PyObject_CallFunctionObjArgs(py_computed, op, args, params, NULL);
        goto done;
    }
    int one = single_tape(tapes, &rec, &watch);
    if (one < 0)
        goto done;
    if (!one && PyList_GET_SIZE(tapes) > 1) {
        /* several recorders: dispatch._defer_on_every, off the hot path */
        int defer = deferrable_now(op);
        if (defer < 0)
            goto done;
        if (defer) {
            PyObject *every = PyObject_GetAttr(dispatch_module, s_defer_on_every);
            if (every == NULL)
                goto done;
            result = PyObject_CallFunctionObjArgs(every, tapes, op, args, params, NULL);
            Py_DECREF(every);
            if (result == NULL)
                goto done;
            if (result != Py_None)
                goto done;
            Py_CLEAR(result);
        }
    }
    if (one) {
        int defer = deferrable_now(op);
        if (defer < 0)
            goto done;
        if (defer) {
            /* dispatch._record, as the Python bind calls it: this file's record unless replaced */
            PyObject *record_fn = module_attr(dispatch_module, s_record);
            if (record_fn == NULL)
                goto done;
            if (record_fn != c_record)
                result = PyObject_CallFunctionObjArgs(record_fn, rec, op, args, params, Py_None, watch, NULL);
            else if (!Py_IS_TYPE(rec, recording_type))
                PyErr_Format(PyExc_TypeError, "record: expected a Recording, got %s", Py_TYPE(rec)->tp_name);
            else
                result = record_impl(rec, op, args, params, Py_None, watch, NULL);
            Py_DECREF(record_fn);
            if (result == NULL)
                goto done;
            if (result != Py_None)
                goto done;
            Py_CLEAR(result);
        }
    }
    result = computed(op, args, params, tapes);

done:
    Py_XDECREF(tapes);
    Py_XDECREF(args);
    Py_XDECREF(params);
    Py_XDECREF(rec);
    Py_XDECREF(watch);
    return result;
}

/* --- force: deferred._force in C ----------------------------------------------------------- */

static PyObject *s_checked, *s_value;

/* The value a pending op reads for operand `a` (a new reference): a Tensor's array, a Held's
 * once checked unmodified (`op` reads it), anything else as it is. */
static PyObject *operand_value(PyObject *a, PyObject *op)
{
    PyTypeObject *cls = Py_TYPE(a);
    if (cls == pending_type)
        return Py_NewRef(SLOT(a, off_forced));  /* computed before its reader */
    if (cls == tensor_type) {
        PyObject *v = SLOT(a, off_value);
        if (v == NULL)
            PyErr_SetString(PyExc_AttributeError, "_value");
        return Py_XNewRef(v);
    }
    if (cls == held_type)
        return PyObject_CallMethodOneArg(a, s_checked, op);
    if (PyType_IsSubtype(cls, tensor_type))
        return PyObject_GetAttr(a, s_value);
    return Py_NewRef(a);
}

/* Compute pending `t`, whose operands are computed: its op's NumPy reference on their values. */
static int compute_pending(PyObject *t)
{
    PyObject *args = SLOT(t, off_args), *op = SLOT(t, off_op), *params = SLOT(t, off_params);
    if (args == NULL || !(PyTuple_Check(args) || PyList_Check(args)) || op == NULL || params == NULL ||
        !PyDict_Check(params)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.force: a pending tensor without its operands");
        return -1;
    }
    Py_INCREF(args);
    Py_INCREF(op);
    Py_INCREF(params);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args), done = 0;
    PyObject *small[8], **values = n <= 8 ? small : PyMem_Malloc(n * sizeof(PyObject *));
    PyObject *out = NULL;
    int err = -1;
    if (values == NULL) {
        PyErr_NoMemory();
        goto end;
    }
    for (; done < n; done++)
        if ((values[done] = operand_value(PySequence_Fast_GET_ITEM(args, done), op)) == NULL)
            goto end;
    /* a producer may put a plain callable in the op's place (staging/tape_calls.py) */
    PyObject *impl = PyDict_GetItemWithError(impls, op);
    if (impl == NULL && PyErr_Occurred())
        goto end;
    out = PyObject_VectorcallDict(impl != NULL ? impl : op, values, n, PyDict_GET_SIZE(params) ? params : NULL);
    if (out != NULL && !PyArray_CheckExact_(out))
        Py_SETREF(out, PyObject_CallOneArg(py_asarray, out));
    if (out == NULL)
        goto end;
    Py_XSETREF(SLOT(t, off_forced), out);
    Py_XSETREF(SLOT(t, off_args), Py_NewRef(Py_None));  /* the operands may now be freed */
    err = 0;
end:
    for (Py_ssize_t i = 0; i < done; i++)
        Py_DECREF(values[i]);
    if (values != small)
        PyMem_Free(values);
    Py_DECREF(args);
    Py_DECREF(op);
    Py_DECREF(params);
    return err;
}

/* force(root): deferred._force, step for step: compute `root` and the pending values it
 * depends on, operands first, with an explicit stack (a long chain must not recurse). Why C:
 * reading the value of a long recording runs this loop once per op, and in Python its
 * bookkeeping cost more than the NumPy call it makes (bench/tape_recording.py). */
static PyObject *force(PyObject *module, PyObject *root)
{
    if (pending_type == NULL || impls == NULL || !Py_IS_TYPE(root, pending_type)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.force takes a PendingTensor (after setup and setup_bind)");
        return NULL;
    }
    PyObject *stack = PyList_New(0);
    if (stack == NULL || PyList_Append(stack, root) < 0)
        goto fail;
    while (PyList_GET_SIZE(stack) > 0) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *t = PyList_GET_ITEM(stack, top);
        if (SLOT(t, off_forced) != NULL && SLOT(t, off_forced) != Py_None) {
            if (PyList_SetSlice(stack, top, top + 1, NULL) < 0)
                goto fail;
            continue;
        }
        PyObject *args = SLOT(t, off_args);
        int waiting = 0;
        if (args != NULL && (PyTuple_Check(args) || PyList_Check(args))) {
            for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(args); i++) {
                PyObject *a = PySequence_Fast_GET_ITEM(args, i);
                if (Py_IS_TYPE(a, pending_type) && (SLOT(a, off_forced) == NULL || SLOT(a, off_forced) == Py_None)) {
                    if (PyList_Append(stack, a) < 0)
                        goto fail;
                    waiting = 1;
                }
            }
        }
        if (waiting)
            continue;
        Py_INCREF(t);
        int err = compute_pending(t);
        Py_DECREF(t);
        if (err < 0 || PyList_SetSlice(stack, top, top + 1, NULL) < 0)
            goto fail;
    }
    Py_DECREF(stack);
    PyObject *out = Py_NewRef(SLOT(root, off_forced));
    PyObject *kept = SLOT(root, off_keep);  /* computed: what a freed recording left to it may go */
    if (kept != NULL && kept != Py_None) {
        SLOT(root, off_keep) = Py_NewRef(Py_None);
        release_values(kept);
    }
    return out;
fail:
    Py_XDECREF(stack);
    return NULL;
}

/* --- unread_roots: what a freed Recording leaves to rebind (recording.orphans) ---------------- */

/* An open-addressing table from object address to a count, for unread_roots: Python dicts keyed
 * by id() cost more than the weak references they save. A key and its count share a slot (one
 * cache line to fetch per probe: the table of a long recording is megabytes). */
typedef struct {
    PyObject *key;
    Py_ssize_t count;
} PointerCount;

typedef struct {
    PointerCount *slots;
    Py_ssize_t mask;
} PointerCounts;

static int counts_init(PointerCounts *t, Py_ssize_t n)
{
    Py_ssize_t size = 8;
    while (size < 2 * n + 2)
        size <<= 1;
    t->slots = PyMem_Calloc(size, sizeof(PointerCount));
    t->mask = size - 1;
    if (t->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The slot of `o`: its own, or the empty one it would take. */
static PointerCount *counts_slot(const PointerCounts *t, PyObject *o)
{
    size_t h = ((size_t)o >> 4) * 0x9E3779B97F4A7C15ull;
    Py_ssize_t i = (Py_ssize_t)(h ^ (h >> 29)) & t->mask;
    while (t->slots[i].key != NULL && t->slots[i].key != o)
        i = (i + 1) & t->mask;
    return &t->slots[i];
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch((const void *)(p))
#else
#define PREFETCH(p) ((void)(p))
#endif
#define UNREAD_AHEAD 16

static int is_unread(PyObject *v)
{
    return Py_IS_TYPE(v, pending_type) && (SLOT(v, off_forced) == NULL || SLOT(v, off_forced) == Py_None);
}

/* Empty the structure of a Recording being freed (`forget`, from its __del__), as list.clear()
 * would, asking for the entries some ahead: a long recording's tens of thousands of entries and
 * the position ints they hold are read once each, and freeing them in the list's deallocator
 * waited on memory for each (a twentieth of recording and freeing ADBench's LSTM). Only when
 * nothing but the recording holds the list. */
static void release_structure(PyObject *rec)
{
    PyObject *structure = off_structure ? SLOT(rec, off_structure) : NULL;
    if (structure == NULL || !PyList_CheckExact(structure) || Py_REFCNT(structure) != 1 ||
        PyList_GET_SIZE(structure) < 1024)
        return;
    PyListObject *list = (PyListObject *)structure;
    PyObject **items = list->ob_item;
    Py_ssize_t n = Py_SIZE(list);
    list->ob_item = NULL;  /* the list is empty before any entry is freed */
    Py_SET_SIZE(list, 0);
    list->allocated = 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        if (i >= UNREAD_AHEAD)
            PREFETCH(items[i - UNREAD_AHEAD]);
        if (i >= UNREAD_AHEAD / 2) {
            PyObject *near = items[i - UNREAD_AHEAD / 2];
            if (PyTuple_CheckExact(near))
                for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(near) && k < 3; k++)
                    PREFETCH(PyTuple_GET_ITEM(near, k));
        }
        Py_DECREF(items[i]);
    }
    PyMem_Free(items);
}

/* Free a freed Recording's values list (the reference handed in), last value first, asking for
 * the values some ahead. A value is freed when its slot is cleared, as those that read it were
 * made after it and went before (the deallocator frees it at once, not from a stack: each is
 * freed while the walk is still near it). Freeing the chain of a kept loss through its operands
 * instead went from reader to operand, one memory wait at a time. */
static void release_values(PyObject *values)
{
    if (!PyList_CheckExact(values) || Py_REFCNT(values) != 1) {
        Py_DECREF(values);
        return;
    }
    PyListObject *list = (PyListObject *)values;
    PyObject **items = list->ob_item;
    Py_ssize_t n = Py_SIZE(list);
    list->ob_item = NULL;  /* empty before any value is freed */
    Py_SET_SIZE(list, 0);
    list->allocated = 0;
    Py_DECREF(values);
    int draining = dealloc_draining;
    dealloc_draining = 0;  /* each value freed at once (pending_dealloc drains what it defers) */
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        if (i >= UNREAD_AHEAD) {
            PyObject *ahead = items[i - UNREAD_AHEAD];
            PREFETCH(ahead);
            PREFETCH((char *)ahead + 64);
        }
        if (i >= UNREAD_AHEAD / 2) {
            PyObject *near = items[i - UNREAD_AHEAD / 2];
            if (Py_IS_TYPE(near, pending_type) && SLOT(near, off_args) != NULL)
                PREFETCH(SLOT(near, off_args));
        }
        Py_XDECREF(items[i]);
    }
    dealloc_draining = draining;
    PyMem_Free(items);
}

/* keep_values(recording, roots): a Recording being freed (its __del__) hands its values list to
 * its last value when that is the one root (`unread_roots`: the one unread value something else
 * holds; a kept loss), which then frees them in the order they were made (release_values), and
 * when it is computed. Only for a long recording whose list nothing else holds, with this file's
 * deallocator in place; the root's own slot in the list becomes None (the list must not hold what
 * holds it; no value before it reads it), and the root is tracked by the collector, so that
 * anything reaching it again from the list is still a cycle it sees. */
static PyObject *keep_values(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 2 || recording_type == NULL || !PyObject_TypeCheck(argv[0], recording_type) || !PyList_Check(argv[1])) {
        PyErr_SetString(PyExc_TypeError, "_crecord.keep_values(recording, roots)");
        return NULL;
    }
    PyObject *rec = argv[0], *roots = argv[1];
    PyObject *values = SLOT(rec, off_values);
    if (dealloc_type != pending_type || off_keep <= 0 || values == NULL || !PyList_CheckExact(values) ||
        Py_REFCNT(values) != 1 || PyList_GET_SIZE(values) < 1024 || PyList_GET_SIZE(roots) != 1)
        Py_RETURN_NONE;
    Py_ssize_t last = PyList_GET_SIZE(values) - 1;
    PyObject *root = PyList_GET_ITEM(values, last);
    if (PyList_GET_ITEM(roots, 0) != root || !is_unread(root) || SLOT(root, off_keep) != Py_None)
        Py_RETURN_NONE;
    if (!PyObject_GC_IsTracked(root))
        PyObject_GC_Track(root);
    PyList_SET_ITEM(values, last, Py_NewRef(Py_None));
    Py_DECREF(root);  /* the list's reference (roots and its holder keep it alive) */
    SLOT(root, off_keep) = Py_NewRef(values);
    Py_DECREF(Py_None);  /* the slot's None */
    Py_RETURN_NONE;
}

/* unread_roots(values): the unread PendingTensors of a freed Recording's `values` that something
 * besides the recording still holds: those whose reference count exceeds the references the
 * recording holds (its `values` list and the operands of its unread pending values, each
 * operands' container counted once). The others are held only through those: each is reached
 * from a root through the operands of unread pending values (rebind.py walks them), or it is
 * freed with the recording. A loss kept after its tape is gone is then one weak reference, where
 * one per unread value cost 9% of recording ADBench's LSTM (bench/tape_recording.py). Counting a
 * reference that is not there would lose a root, so only list and tuple slots are counted; any
 * reference not counted makes a root, which is only one weak reference too many.
 *
 * The count of each unread value is kept in the value itself while this function runs, tagged
 * (odd, so never an object's address) in its `_sym` slot, which is None for every PendingTensor:
 * a table of counts by address took a cache miss per operand (8 ms for the 60,000 values of a
 * 1,024-step LSTM). `values` is walked once, last first: a value's readers were recorded after it,
 * so when it is reached their operands are counted, it is decided and its slot restored, and its
 * own operands (most often recorded a few ops before it, so reached soon after, while still in the
 * cache) are counted. A reference counted is always one that is there (each operands' container
 * once), so a value decided before all were counted (an operand recorded after its reader: only
 * rebind.py's snapshots) is at worst a root too many. Every slot tagged is restored: at its
 * value's turn, or, when some tagged object was never reached (an operand that is not one of
 * `values`), from the list of those tagged. Nothing between tagging and restoring runs Python
 * code or the collector (which would walk the slot): the roots' list is made first, appending to
 * it allocates no object, and the rest is PyMem memory. A value whose `_sym` is not None is a root. */
#define TAGGED(count) ((PyObject *)(((uintptr_t)(count) << 1) | 1))
#define IS_TAGGED(o) (((uintptr_t)(o)) & 1)
#define TAG_COUNT(o) ((Py_ssize_t)((uintptr_t)(o) >> 1))

static PyObject *unread_roots(PyObject *module, PyObject *values)
{
    if (pending_type == NULL || !PyList_Check(values)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.unread_roots takes a Recording's values (after setup)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *roots = PyList_New(0);
    if (roots == NULL)
        return NULL;
    /* operands' containers counted, only those another object refers to as well (one that only
     * its value refers to cannot be shared); the objects tagged, in order */
    PointerCounts containers = {NULL, 0};
    PyObject **tagged = NULL;
    Py_ssize_t n_tagged = 0, capacity = 0, restored = 0;
    int failed = 0;
    /* nothing from here to the end runs Python code: `values` stays as it is */
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        PyObject *v = PyList_GET_ITEM(values, i), *args;
        /* A long recording's values are megabytes, read here once each, with their operands'
         * containers: ask for them some values ahead, as the walk is bound by waiting for memory */
        if (i >= UNREAD_AHEAD) {
            PyObject *ahead = PyList_GET_ITEM(values, i - UNREAD_AHEAD);
            PREFETCH(ahead);
            PREFETCH((char *)ahead + 64);
            PyObject *near = PyList_GET_ITEM(values, i - UNREAD_AHEAD / 2);
            if (Py_IS_TYPE(near, pending_type) && SLOT(near, off_args) != NULL)
                PREFETCH(SLOT(near, off_args));
        }
        if (!is_unread(v))
            continue;
        PyObject *sym = SLOT(v, off_sym);
        Py_ssize_t counted = 0;  /* references counted: this slot of `values`, its readers' operands */
        if (sym == Py_None) {
            counted = 1;
        } else if (sym != NULL && IS_TAGGED(sym)) {
            counted = TAG_COUNT(sym) + 1;
            SLOT(v, off_sym) = Py_None;  /* the slot's reference to None was never released */
            restored++;
        }
        if (Py_REFCNT(v) > counted && !failed && PyList_Append(roots, v) < 0)
            failed = 1;  /* go on restoring the slots */
        args = SLOT(v, off_args);
        if (failed || args == NULL || !(PyTuple_CheckExact(args) || PyList_CheckExact(args)))
            continue;
        if (Py_REFCNT(args) > 1) {
            if (containers.slots == NULL && counts_init(&containers, n) < 0) {
                failed = 1;
                continue;
            }
            PointerCount *c = counts_slot(&containers, args);
            if (c->key != NULL)
                continue;  /* shared by another value: its items were counted */
            c->key = args;
        }
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(args); k++) {
            PyObject *a = PySequence_Fast_GET_ITEM(args, k);
            if (!is_unread(a) || (sym = SLOT(a, off_sym)) == NULL)
                continue;
            if (IS_TAGGED(sym)) {
                SLOT(a, off_sym) = TAGGED(TAG_COUNT(sym) + 1);
            } else if (sym == Py_None) {
                if (n_tagged == capacity) {
                    Py_ssize_t grown = capacity ? 2 * capacity : 1024;
                    PyObject **more = PyMem_Realloc(tagged, grown * sizeof(PyObject *));
                    if (more == NULL) {
                        failed = 1;
                        break;
                    }
                    tagged = more, capacity = grown;
                }
                tagged[n_tagged++] = a;
                SLOT(a, off_sym) = TAGGED(1);
            }
        }
    }
    if (restored != n_tagged)  /* some tagged operand was never reached as a value */
        for (Py_ssize_t k = 0; k < n_tagged; k++)
            if (IS_TAGGED(SLOT(tagged[k], off_sym)))
                SLOT(tagged[k], off_sym) = Py_None;
    PyMem_Free(tagged);
    PyMem_Free(containers.slots);
    if (failed) {
        Py_CLEAR(roots);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    }
    return roots;
}

/* setup_bind(names): what bind() uses, from dispatch.py. */
#define N_BIND 8
static PyObject *setup_bind(PyObject *module, PyObject *names)
{
    const char *keys[N_BIND] = {"stack", "deferred", "eager_only", "computed", "dispatch", "record", "impls",
                                "asarray"};
    PyObject *given[N_BIND];
    if (!PyDict_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "_crecord.setup_bind takes a dict");
        return NULL;
    }
    for (int i = 0; i < N_BIND; i++) {
        given[i] = PyDict_GetItemString(names, keys[i]);
        if (given[i] == NULL) {
            PyErr_Format(PyExc_KeyError, "_crecord.setup_bind: missing %s", keys[i]);
            return NULL;
        }
    }
    if (!PyCallable_Check(given[2]) || !PyDict_Check(given[6])) {
        PyErr_SetString(PyExc_TypeError, "_crecord.setup_bind: eager_only must be callable and impls a dict");
        return NULL;
    }
    PyObject *fresh = PyDict_New();
    if (fresh == NULL)
        return NULL;
    PyObject **targets[N_BIND] = {&stack_local, &deferred_module, &eager_only, &py_computed, &dispatch_module,
                                  &c_record, &impls, &py_asarray};
    for (int i = 0; i < N_BIND; i++) {
        Py_INCREF(given[i]);
        Py_XSETREF(*targets[i], given[i]);
    }
    Py_XSETREF(deferrable, fresh);
    op_cache_clear();
    Py_RETURN_NONE;
}

/* --- getitem: x[index] for a basic index, with two binds at most -----------------------------
 *
 * functions/shape.py's getitem, for its common case: a concrete Tensor (or PendingTensor or
 * Variable) indexed by a Python int, a slice of ints or Nones, or a tuple of them, no more
 * entries than axes, every int in range. It binds exactly what getitem binds there: `slice`
 * with normalized (start, stop, step) per axis (ir/ops/indexing.py), skipped when it keeps
 * everything, then `reshape` dropping the int-indexed axes. Anything else (and every error)
 * returns NotImplemented, and the Python getitem answers, raising its own messages. The
 * Python reference of this function is tracer/basic_index.py. */
static PyObject *slice_op, *reshape_op;  /* set by setup_getitem */
static PyObject *s_starts, *s_stops, *s_steps, *s_shape_kw;

/* One index entry on an axis of length d: its normalized (start, stop, step) and whether it
 * is an int (an axis dropped). 1 on success, 0 when Python's getitem must answer, -1 on error. */
static int index_entry(PyObject *e, Py_ssize_t d, Py_ssize_t *start, Py_ssize_t *stop, Py_ssize_t *step,
                       int *is_int)
{
    Py_ssize_t n;
    *is_int = 0;
    if (PyLong_CheckExact(e)) {
        int overflow;
        long long i = PyLong_AsLongLongAndOverflow(e, &overflow);
        if (overflow || (i == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        if (i < -(long long)d || i >= (long long)d)
            return 0;  /* Python raises the IndexError */
        *start = (Py_ssize_t)(i < 0 ? i + d : i);
        *stop = *start + 1;
        *step = 1;
        *is_int = 1;
        return 1;
    }
    if (!PySlice_Check(e))
        return 0;
    PySliceObject *sl = (PySliceObject *)e;
    /* None or exact ints only: other objects' __index__ may run code (or fail): Python's path */
    if ((sl->start != Py_None && !PyLong_CheckExact(sl->start)) ||
        (sl->stop != Py_None && !PyLong_CheckExact(sl->stop)) ||
        (sl->step != Py_None && !PyLong_CheckExact(sl->step)))
        return 0;
    Py_ssize_t a, b, c;
    if (PySlice_Unpack(e, &a, &b, &c) < 0) {  /* a zero step: Python raises */
        PyErr_Clear();
        return 0;
    }
    n = PySlice_AdjustIndices(d, &a, &b, c);
    if (n == 0) {
        *start = 0, *stop = 0, *step = 1;
    } else if (n == 1) {
        *start = a, *stop = a + 1, *step = 1;
    } else {
        *start = a, *stop = a + (n - 1) * c + (c > 0 ? 1 : -1), *step = c;
    }
    return 1;
}

static PyObject *ssize_tuple(const Py_ssize_t *values, Py_ssize_t n)
{
    PyObject *t = PyTuple_New(n);
    if (t == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromSsize_t(values[i]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

#define GETITEM_MAX_NDIM 32
#define INDEX_MEMO_MAX 4096

/* An index's entry: [slice params or None, reshape params or None, slice hint, reshape hint],
 * the hints being record_impl's (NULL there is None here). */
enum { ENTRY_SLICE, ENTRY_RESHAPE, ENTRY_SLICE_HINT, ENTRY_RESHAPE_HINT, ENTRY_SIZE };

/* (shape, index key) -> its entry, for indices of exact ints and slices of exact ints or Nones
 * (`index_key`). An index repeated on a tape (x[0], x[i, j], gates[n:2 * n] in a loop) then
 * skips parsing and building its params, and its two records skip the signature memo's key
 * (their hints). The params dicts are shared by every op recorded from the entry, as the
 * signature memo already shares the first params it saw: nobody mutates them. Cleared when it
 * reaches INDEX_MEMO_MAX entries. */
static PyObject *index_memo;

/* One entry's key: an exact int itself; a slice of exact ints or Nones as (slice type, start,
 * stop, step) (slices are unhashable before Python 3.12; the slice type, never an entry's key,
 * keeps it apart from a tuple of ints). A new reference; NULL without an error for anything else. */
static PyObject *entry_key(PyObject *e)
{
    if (PyLong_CheckExact(e))
        return Py_NewRef(e);
    if (!PySlice_Check(e))
        return NULL;
    PySliceObject *sl = (PySliceObject *)e;
    if ((sl->start != Py_None && !PyLong_CheckExact(sl->start)) ||
        (sl->stop != Py_None && !PyLong_CheckExact(sl->stop)) ||
        (sl->step != Py_None && !PyLong_CheckExact(sl->step)))
        return NULL;
    return PyTuple_Pack(4, (PyObject *)&PySlice_Type, sl->start, sl->stop, sl->step);
}

/* The index memo's key of `index` (without the shape): an entry's key, or a tuple of them. A new
 * reference; NULL without an error when the index is not memoized, NULL with one on failure. */
static PyObject *index_key(PyObject *index)
{
    if (!PyTuple_CheckExact(index))
        return entry_key(index);
    Py_ssize_t n = PyTuple_GET_SIZE(index);
    PyObject *key = PyTuple_New(n);
    if (key == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = entry_key(PyTuple_GET_ITEM(index, i));
        if (k == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, i, k);
    }
    return key;
}

static PyObject *index_binds(PyObject *module, PyObject *x, PyObject *entry);

/* The entry of `index` on an array of this shape (a new list), NotImplemented when Python's
 * getitem must answer, NULL on error. */
static PyObject *parse_index(PyObject *shape, PyObject *index)
{
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > GETITEM_MAX_NDIM)
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape), n_entries, dims[GETITEM_MAX_NDIM];
    Py_ssize_t starts[GETITEM_MAX_NDIM], stops[GETITEM_MAX_NDIM], steps[GETITEM_MAX_NDIM];
    Py_ssize_t kept[GETITEM_MAX_NDIM];
    int is_tuple = PyTuple_Check(index);
    n_entries = is_tuple ? PyTuple_GET_SIZE(index) : 1;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred())
            return NULL;
    }
    if (n_entries > ndim)
        Py_RETURN_NOTIMPLEMENTED;  /* too many indices: Python raises */
    int full = 1, n_kept = 0;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        int is_int = 0;
        if (i < n_entries) {
            PyObject *e = is_tuple ? PyTuple_GET_ITEM(index, i) : index;
            int ok = index_entry(e, dims[i], &starts[i], &stops[i], &steps[i], &is_int);
            if (ok <= 0) {
                if (ok < 0)
                    return NULL;
                Py_RETURN_NOTIMPLEMENTED;
            }
        } else if (dims[i] == 0) {
            starts[i] = 0, stops[i] = 0, steps[i] = 1;
        } else {
            starts[i] = 0, stops[i] = dims[i], steps[i] = 1;
        }
        Py_ssize_t len = steps[i] > 0 ? (stops[i] - starts[i] + steps[i] - 1) / steps[i]
                                      : (starts[i] - stops[i] - steps[i] - 1) / -steps[i];
        if (len < 0)
            len = 0;
        if (!(len == dims[i] && (dims[i] <= 1 || steps[i] == 1)))
            full = 0;
        if (!is_int)
            kept[n_kept++] = len;
    }
    PyObject *entry = PyList_New(ENTRY_SIZE);
    if (entry == NULL)
        return NULL;
    for (int k = 0; k < ENTRY_SIZE; k++)
        PyList_SET_ITEM(entry, k, Py_NewRef(Py_None));
    if (!full) {
        PyObject *a = ssize_tuple(starts, ndim), *b = ssize_tuple(stops, ndim), *c = ssize_tuple(steps, ndim);
        PyObject *slice_kw = NULL;
        if (a != NULL && b != NULL && c != NULL)
            slice_kw = Py_BuildValue("{OOOOOO}", s_starts, a, s_stops, b, s_steps, c);
        Py_XDECREF(a), Py_XDECREF(b), Py_XDECREF(c);
        if (slice_kw == NULL) {
            Py_DECREF(entry);
            return NULL;
        }
        PyList_SetItem(entry, ENTRY_SLICE, slice_kw);
    }
    if (n_kept < ndim) {
        PyObject *out_shape = ssize_tuple(kept, n_kept), *reshape_kw = NULL;
        if (out_shape != NULL)
            reshape_kw = Py_BuildValue("{OO}", s_shape_kw, out_shape);
        Py_XDECREF(out_shape);
        if (reshape_kw == NULL) {
            Py_DECREF(entry);
            return NULL;
        }
        PyList_SetItem(entry, ENTRY_RESHAPE, reshape_kw);
    }
    return entry;
}

/* The index memo's recent entries by the shape's items and the index's own objects, compared by
 * identity (an int index, or a slice's start, stop and step: small ints are one object each), so
 * that `gates[n:2 * n]` or `main[i]` in a loop skips the memo's key (two tuples made, hashed and
 * compared: a fifth of getitem's own instructions). A miss takes the memo's path, which answers
 * the same entry. Entries hold references to what they compare. */
#define INDEX_CACHE_SIZE 64
static struct {
    PyObject *shape, *start, *stop, *step, *entry;
} index_cache[INDEX_CACHE_SIZE];

/* The objects an int index or a slice of exact ints and Nones is compared by (borrowed; an int
 * index is its own start, with NULL stop and step): 1, or 0 for an index not cached. */
static int index_parts(PyObject *index, PyObject **start, PyObject **stop, PyObject **step)
{
    if (PyLong_CheckExact(index)) {
        *start = index, *stop = *step = NULL;
        return 1;
    }
    if (!PySlice_Check(index))
        return 0;
    PySliceObject *sl = (PySliceObject *)index;
    if ((sl->start != Py_None && !PyLong_CheckExact(sl->start)) || (sl->stop != Py_None && !PyLong_CheckExact(sl->stop)) ||
        (sl->step != Py_None && !PyLong_CheckExact(sl->step)))
        return 0;
    *start = sl->start, *stop = sl->stop, *step = sl->step;
    return 1;
}

static size_t index_cache_slot(PyObject *shape, PyObject *start, PyObject *stop, PyObject *step)
{
    size_t h = (size_t)PyTuple_GET_SIZE(shape);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++)
        h = h * 1000003u ^ (size_t)PyTuple_GET_ITEM(shape, i);
    h = (h * 1000003u ^ (size_t)start) * 1000003u ^ (size_t)stop;
    h = h * 1000003u ^ (size_t)step;
    h ^= h >> 17;
    return (h >> 4) % INDEX_CACHE_SIZE;
}

/* Whether shapes a and b (exact tuples) have the same items, compared by identity. */
static int same_items(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++)
        if (PyTuple_GET_ITEM(a, i) != PyTuple_GET_ITEM(b, i))
            return 0;
    return 1;
}

static PyObject *getitem(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "getitem(x, index) takes 2 arguments");
        return NULL;
    }
    PyObject *x = argv[0], *index = argv[1];
    if (slice_op == NULL || pending_type == NULL || py_computed == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    PyTypeObject *cls = Py_TYPE(x);
    PyObject *shape;
    if (cls == pending_type) {
        shape = Py_XNewRef(SLOT(x, off_shape));
    } else if (cls == tensor_type || cls == variable_type) {
        PyObject *value = SLOT(x, off_value);
        if (value == NULL || SLOT(x, off_sym) != Py_None)
            Py_RETURN_NOTIMPLEMENTED;  /* abstract: traced by the Python getitem */
        shape = PyObject_GetAttr(value, s_shape);
    } else {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (shape == NULL)
        return NULL;
    PyObject *key = NULL, *entry = NULL, *y = NULL, *start, *stop, *step;
    size_t slot = 0;
    int cached = PyTuple_CheckExact(shape) && index_parts(index, &start, &stop, &step);
    if (cached) {
        slot = index_cache_slot(shape, start, stop, step);
        if (index_cache[slot].entry != NULL && index_cache[slot].start == start && index_cache[slot].stop == stop &&
            index_cache[slot].step == step && same_items(index_cache[slot].shape, shape)) {
            entry = Py_NewRef(index_cache[slot].entry);
            y = index_binds(module, x, entry);
            goto done;
        }
    }
    PyObject *ikey = PyTuple_CheckExact(shape) ? index_key(index) : NULL;
    if (ikey == NULL && PyErr_Occurred())
        goto done;
    if (ikey != NULL) {
        key = PyTuple_Pack(2, shape, ikey);
        Py_DECREF(ikey);
        if (key == NULL)
            goto done;
        entry = Py_XNewRef(PyDict_GetItemWithError(index_memo, key));
        if (entry == NULL && PyErr_Occurred())
            goto done;
    }
    if (entry == NULL) {
        entry = parse_index(shape, index);
        if (entry == NULL || entry == Py_NotImplemented) {
            y = entry;
            entry = NULL;
            goto done;
        }
        if (key != NULL) {
            if (PyDict_GET_SIZE(index_memo) >= INDEX_MEMO_MAX)
                PyDict_Clear(index_memo);
            if (PyDict_SetItem(index_memo, key, entry) < 0)
                goto done;
        }
    }
    if (cached && key != NULL) {  /* an entry the memo keeps: cached by identity too */
        Py_XSETREF(index_cache[slot].shape, Py_NewRef(shape));
        Py_XSETREF(index_cache[slot].start, Py_XNewRef(start));
        Py_XSETREF(index_cache[slot].stop, Py_XNewRef(stop));
        Py_XSETREF(index_cache[slot].step, Py_XNewRef(step));
        Py_XSETREF(index_cache[slot].entry, Py_NewRef(entry));
    }
    y = index_binds(module, x, entry);
done:
    Py_DECREF(shape);
    Py_XDECREF(key);
    Py_XDECREF(entry);
    return y;
}

/* An entry's hint (a new reference, or NULL for none). */
static PyObject *entry_hint(PyObject *entry, int k)
{
    PyObject *h = PyList_GET_ITEM(entry, k);
    return h == Py_None ? NULL : Py_NewRef(h);
}

/* Keep `hint` (a reference we own, or NULL) as the entry's hint k. */
static void keep_hint(PyObject *entry, int k, PyObject *hint)
{
    if (hint != NULL)
        PyList_SetItem(entry, k, hint);  /* steals hint, releases the previous one */
}

/* getitem's binds for an entry: `slice` with its params (none when None), then `reshape` with its
 * params (none when None). While one tape records both deferred (dispatch.bind's hot path) and
 * records in C, they are recorded one after the other without bind's prologue twice. */
static PyObject *index_binds(PyObject *module, PyObject *x, PyObject *entry)
{
    /* borrowed from the entry, whose params items are never replaced */
    PyObject *slice_kw = PyList_GET_ITEM(entry, ENTRY_SLICE), *reshape_kw = PyList_GET_ITEM(entry, ENTRY_RESHAPE);
    if (slice_kw == Py_None)
        slice_kw = NULL;
    if (reshape_kw == Py_None)
        reshape_kw = NULL;
    PyObject *tapes = current_tapes(), *rec = NULL, *watch = NULL, *y = NULL;
    if (tapes == NULL)
        return NULL;
    int one = PyList_Check(tapes) ? single_tape(tapes, &rec, &watch) : 0;
    Py_DECREF(tapes);
    if (one < 0)
        return NULL;
    if (one && Py_IS_TYPE(rec, recording_type)) {
        int fast = deferrable_now(slice_op);
        if (fast > 0)
            fast = deferrable_now(reshape_op);
        PyObject *record_fn = fast > 0 ? module_attr(dispatch_module, s_record) : NULL;
        if (fast < 0 || (fast > 0 && record_fn == NULL))
            goto done;
        if (fast > 0 && record_fn == c_record) {
            y = Py_NewRef(x);
            if (slice_kw != NULL) {
                PyObject *args = PyTuple_Pack(1, x), *hint = entry_hint(entry, ENTRY_SLICE_HINT);
                Py_CLEAR(y);
                if (args != NULL)
                    y = record_impl(rec, slice_op, args, slice_kw, Py_None, watch, &hint);
                Py_XDECREF(args);
                keep_hint(entry, ENTRY_SLICE_HINT, hint);
            }
            if (y != NULL && y != Py_None && reshape_kw != NULL) {
                PyObject *args = PyTuple_Pack(1, y), *hint = entry_hint(entry, ENTRY_RESHAPE_HINT), *z = NULL;
                if (args != NULL)
                    z = record_impl(rec, reshape_op, args, reshape_kw, Py_None, watch, &hint);
                Py_XDECREF(args);
                keep_hint(entry, ENTRY_RESHAPE_HINT, hint);
                Py_SETREF(y, z);
            }
            if (y == Py_None)  /* x is not tracked by the tape: bind computes it (below) */
                Py_CLEAR(y);
            else if (slice_kw == NULL && y == x)  /* nothing recorded yet (only a reshape): bind */
                Py_CLEAR(y);
            else {
                Py_XDECREF(record_fn);
                goto done;
            }
            if (PyErr_Occurred()) {
                Py_XDECREF(record_fn);
                goto done;
            }
        }
        Py_XDECREF(record_fn);
    }
    y = Py_NewRef(x);
    if (slice_kw != NULL) {
        PyObject *kwnames = PyTuple_Pack(3, s_starts, s_stops, s_steps);
        PyObject *call[5] = {slice_op, x, PyDict_GetItem(slice_kw, s_starts), PyDict_GetItem(slice_kw, s_stops),
                             PyDict_GetItem(slice_kw, s_steps)};
        Py_CLEAR(y);
        if (kwnames != NULL)
            y = bind(module, call, 2, kwnames);
        Py_XDECREF(kwnames);
        if (y == NULL)
            goto done;
    }
    if (reshape_kw != NULL) {
        PyObject *kwnames = PyTuple_Pack(1, s_shape_kw);
        PyObject *call[3] = {reshape_op, y, PyDict_GetItem(reshape_kw, s_shape_kw)};
        PyObject *z = NULL;
        if (kwnames != NULL)
            z = bind(module, call, 2, kwnames);
        Py_XDECREF(kwnames);
        Py_SETREF(y, z);
    }
done:
    Py_XDECREF(rec);
    Py_XDECREF(watch);
    return y;
}

/* Tensor.__getitem__ (an instancemethod of this function): getitem's answer, or the general
 * getitem of functions/shape.py when getitem declines. */
static PyObject *py_getitem_fallback;
static PyObject *getitem_or_general(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    PyObject *y = getitem(module, argv, argc);
    if (y != Py_NotImplemented && (argc < 1 || y != argv[0]))
        return y;
    /* t[:], t[...]: getitem answered t itself, but a result must be a new object
     * (functions/fresh.py: t[i] = v changes t; a Variable changes by assign), as the
     * general getitem's is. */
    Py_XDECREF(y);
    if (py_getitem_fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_crecord.setup_getitem has not been given the general getitem");
        return NULL;
    }
    return PyObject_Vectorcall(py_getitem_fallback, argv, argc, NULL);
}

/* setup_getitem(slice_op, reshape_op[, general]): the ops getitem binds (basic_index.py calls it),
 * and the general getitem; with it, returns Tensor.__getitem__ as a method. */
static PyObject *setup_getitem(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 2 && argc != 3) {
        PyErr_SetString(PyExc_TypeError, "setup_getitem(slice_op, reshape_op[, general]) takes 2 or 3 arguments");
        return NULL;
    }
    Py_XSETREF(slice_op, Py_NewRef(argv[0]));
    Py_XSETREF(reshape_op, Py_NewRef(argv[1]));
    if (argc == 2)
        Py_RETURN_NONE;
    Py_XSETREF(py_getitem_fallback, Py_NewRef(argv[2]));
    PyObject *fn = PyObject_GetAttrString(module, "getitem_or_general");
    if (fn == NULL)
        return NULL;
    PyObject *method = PyInstanceMethod_New(fn);
    Py_DECREF(fn);
    return method;
}

/* --- binary operators: Tensor.__mul__ and the like ------------------------------------------- */

/* x * y on float64 tensors (or a float64 tensor and a Python float or int) is the most common
 * op of an eager loop, and the Python operator (functions/elementwise.py's `fn`, then
 * `promote_pair`) cost as much as recording it (bench/tape_recording.py). This object does
 * what they do in that case, bind(op, x, y) with the Python scalar made a numpy.float64, and
 * hands every other case (other dtypes, WeakScalars, arrays, subclasses) to the Python
 * operator, unchanged. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *op, *fallback;  /* the op bound; the Python operator */
    int swapped;  /* a reflected operator (__rmul__): fn(other, self) */
} BinaryOperator;

/* The float64 dtype of a concrete PendingTensor or Tensor operand, or of a NumPy array (exactly
 * ndarray), borrowed; else NULL. */
static PyObject *float64_operand(PyObject *a)
{
    PyTypeObject *cls = Py_TYPE(a);
    if (cls == pending_type)
        return SLOT(a, off_dtype) == float64_dtype ? float64_dtype : NULL;
    if (cls == tensor_type) {
        if (SLOT(a, off_sym) != Py_None)
            return NULL;
        a = SLOT(a, off_value);
        if (a == NULL)
            return NULL;
    } else if (cls != ndarray_type) {
        return NULL;
    }
    if (!Py_IS_TYPE(a, ndarray_type))
        return NULL;
    PyObject *d = PyObject_GetAttr(a, s_dtype);
    if (d == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(d);  /* a dtype the array holds: alive while it is */
    return d == float64_dtype ? float64_dtype : NULL;
}

/* bind(op, x, y) when x and y are float64 (a Python float or int counting as float64 beside a
 * float64 tensor or array, as promote_pair makes it: numpy.float64(scalar)), and one of them is
 * a tensor: what functions/elementwise.py's binary functions do then. NULL without an error when
 * that is not the case (the caller's Python path answers). */
static PyObject *float64_binary(PyObject *op, PyObject *x, PyObject *y)
{
    if (float64_dtype == NULL || py_computed == NULL)
        return NULL;
    int tx = float64_operand(x) != NULL, ty = float64_operand(y) != NULL;
    if (!Py_IS_TYPE(x, tensor_type) && !Py_IS_TYPE(x, pending_type) && !Py_IS_TYPE(y, tensor_type) &&
        !Py_IS_TYPE(y, pending_type))
        return NULL;  /* two arrays: NumPy's business */
    PyObject *scalar = NULL;
    if (tx && !ty && (PyFloat_CheckExact(y) || PyLong_CheckExact(y)))
        scalar = y;
    else if (ty && !tx && (PyFloat_CheckExact(x) || PyLong_CheckExact(x)))
        scalar = x;
    if (!(tx && ty) && scalar == NULL)
        return NULL;
    PyObject *weak = NULL;
    if (scalar != NULL && (weak = PyObject_CallOneArg((PyObject *)float64_type, scalar)) == NULL)
        return NULL;  /* numpy.float64(10**400): the error promote_pair raises */
    PyObject *call[3] = {op, scalar == x ? weak : x, scalar == y ? weak : y};
    PyObject *out = bind(NULL, call, 3, NULL);
    Py_XDECREF(weak);
    return out;
}

static PyObject *binary_call(BinaryOperator *self, PyObject *const *argv, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == 2 && kwnames == NULL) {
        PyObject *out = float64_binary(self->op, argv[self->swapped], argv[1 - self->swapped]);
        if (out != NULL || PyErr_Occurred())
            return out;
    }
    return PyObject_Vectorcall(self->fallback, argv, nargsf, kwnames);
}

static void binary_dealloc(BinaryOperator *self)
{
    Py_XDECREF(self->op);
    Py_XDECREF(self->fallback);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject binary_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gradtape.tracer._crecord.BinaryOperator",
    .tp_basicsize = sizeof(BinaryOperator),
    .tp_dealloc = (destructor)binary_dealloc,
    .tp_vectorcall_offset = offsetof(BinaryOperator, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A Tensor operator: bind(op, x, y) for float64 operands, else the Python operator.",
};

/* binary_operator(op, fallback, swapped): the method for Tensor (`fallback` is the Python one). */
static PyObject *binary_operator(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 3) {
        PyErr_SetString(PyExc_TypeError, "binary_operator(op, fallback, swapped) takes 3 arguments");
        return NULL;
    }
    if (PyType_Ready(&binary_type) < 0)
        return NULL;
    BinaryOperator *f = PyObject_New(BinaryOperator, &binary_type);
    if (f == NULL)
        return NULL;
    f->vectorcall = (vectorcallfunc)binary_call;
    f->op = Py_NewRef(argv[0]);
    f->fallback = Py_NewRef(argv[1]);
    f->swapped = PyObject_IsTrue(argv[2]);
    PyObject *method = PyInstanceMethod_New((PyObject *)f);
    Py_DECREF(f);
    return method;
}

/* --- Tensor.__array_ufunc__: `array * t` ----------------------------------------------------
 *
 * NumPy's `array * t` (and np.multiply(array, t)) asks the tensor's __array_ufunc__, whose Python
 * path (numpy_dispatch.array_ufunc, then the binary function and promote_pair) cost 6,000
 * instructions over the op's record: ADBench's LSTM multiplies a data row by a parameter every
 * step. This object answers ufunc(x, y).__call__ for the four ufuncs of the binary operators with
 * float64_binary, as the Python path would, and hands everything else to that path unchanged. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *ops, *fallback;  /* {ufunc: op}; numpy_dispatch.array_ufunc */
} UfuncOperator;

static PyObject *s_call_method;  /* "__call__" */

static PyObject *ufunc_call(UfuncOperator *self, PyObject *const *argv, size_t nargsf, PyObject *kwnames)
{
    /* (tensor, ufunc, method, *inputs) */
    if (PyVectorcall_NARGS(nargsf) == 5 && kwnames == NULL && PyUnicode_Check(argv[2]) &&
        PyUnicode_Compare(argv[2], s_call_method) == 0) {
        PyObject *op = PyDict_GetItemWithError(self->ops, argv[1]);
        if (op == NULL && PyErr_Occurred())
            return NULL;
        if (op != NULL) {
            PyObject *out = float64_binary(op, argv[3], argv[4]);
            if (out != NULL || PyErr_Occurred())
                return out;
        }
    }
    return PyObject_Vectorcall(self->fallback, argv, nargsf, kwnames);
}

static void ufunc_dealloc(UfuncOperator *self)
{
    Py_XDECREF(self->ops);
    Py_XDECREF(self->fallback);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ufunc_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gradtape.tracer._crecord.UfuncOperator",
    .tp_basicsize = sizeof(UfuncOperator),
    .tp_dealloc = (destructor)ufunc_dealloc,
    .tp_vectorcall_offset = offsetof(UfuncOperator, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Tensor.__array_ufunc__: bind(op, x, y) for a binary operator's ufunc on float64 operands, "
              "else the Python method.",
};

/* ufunc_operator(ops, fallback): Tensor.__array_ufunc__ as a method (`ops` maps ufuncs to ops,
 * `fallback` is the Python method). */
static PyObject *ufunc_operator(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 2 || !PyDict_Check(argv[0])) {
        PyErr_SetString(PyExc_TypeError, "ufunc_operator(ops: dict, fallback) takes 2 arguments");
        return NULL;
    }
    if (PyType_Ready(&ufunc_type) < 0)
        return NULL;
    if (s_call_method == NULL && (s_call_method = PyUnicode_InternFromString("__call__")) == NULL)
        return NULL;
    UfuncOperator *f = PyObject_New(UfuncOperator, &ufunc_type);
    if (f == NULL)
        return NULL;
    f->vectorcall = (vectorcallfunc)ufunc_call;
    f->ops = Py_NewRef(argv[0]);
    f->fallback = Py_NewRef(argv[1]);
    PyObject *method = PyInstanceMethod_New((PyObject *)f);
    Py_DECREF(f);
    return method;
}

static PyMethodDef methods[] = {
    {"record", (PyCFunction)(void (*)(void))record, METH_FASTCALL,
     "record(recording, op, args, params, result, watch_reads): Recording.record in C."},
    {"bind", (PyCFunction)(void (*)(void))bind, METH_FASTCALL | METH_KEYWORDS,
     "bind(op, *args, **params): dispatch.bind in C."},
    {"getitem", (PyCFunction)(void (*)(void))getitem, METH_FASTCALL,
     "getitem(x, index): x[index] for a basic index (ints and slices), or NotImplemented."},
    {"setup_getitem", (PyCFunction)(void (*)(void))setup_getitem, METH_FASTCALL,
     "setup_getitem(slice_op, reshape_op[, general]): the ops getitem binds; Tensor.__getitem__."},
    {"getitem_or_general", (PyCFunction)(void (*)(void))getitem_or_general, METH_FASTCALL,
     "getitem_or_general(x, index): getitem(x, index), else the general getitem."},
    {"ufunc_operator", (PyCFunction)(void (*)(void))ufunc_operator, METH_FASTCALL,
     "ufunc_operator(ops, fallback): Tensor.__array_ufunc__ binding float64 operands in C."},
    {"binary_operator", (PyCFunction)(void (*)(void))binary_operator, METH_FASTCALL,
     "binary_operator(op, fallback, swapped): a Tensor operator binding op on float64 operands in C."},
    {"unread_roots", unread_roots, METH_O,
     "unread_roots(values): the unread pending values of a freed Recording that something else holds."},
    {"force", force, METH_O, "force(pending): deferred._force in C: compute it and the pending values it reads."},
    {"forget", forget, METH_O, "forget(recording): drop what record remembers of a recording being freed."},
    {"keep_values", (PyCFunction)(void (*)(void))keep_values, METH_FASTCALL,
     "keep_values(recording, roots): a freed Recording's values to its kept last value (see _crecord.c)."},
    {"fast_dealloc", fast_dealloc, METH_NOARGS,
     "fast_dealloc(): free PendingTensors with this file's deallocator; True when it is in place."},
    {"untrack_held", untrack_held, METH_O, "untrack_held(h): a new Held and its site off the collector's lists."},
    {"setup_bind", setup_bind, METH_O, "setup_bind(names): what bind() uses (dispatch.py calls it)."},
    {"setup_tape", setup_tape, METH_O, "setup_tape(GradientTape): the slots bind reads on a tape (gradient_tape.py calls it)."},
    {"setup", setup, METH_O, "setup(names): the classes, memos and Python helpers record() uses (recording.py calls it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_crecord", "The eager recording hot path in C (see recording.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__crecord(void)
{
    s_constants = PyUnicode_InternFromString("_constants");
    s_input_types = PyUnicode_InternFromString("_input_types");
    s_structure_entry = PyUnicode_InternFromString("_structure_entry");
    s_shape = PyUnicode_InternFromString("shape");
    s_dtype = PyUnicode_InternFromString("dtype");
    s_kind = PyUnicode_InternFromString("kind");
    s_tapes = PyUnicode_InternFromString("tapes");
    s_enabled = PyUnicode_InternFromString("enabled");
    s_tape = PyUnicode_InternFromString("_tape");
    s_watch = PyUnicode_InternFromString("_watch_accessed_variables");
    s_record = PyUnicode_InternFromString("_record");
    s_variable_reads = PyUnicode_InternFromString("variable_reads");
    s_defer_on_every = PyUnicode_InternFromString("_defer_on_every");
    s_checked = PyUnicode_InternFromString("checked");
    s_value = PyUnicode_InternFromString("_value");
    s_flags = PyUnicode_InternFromString("flags");
    s_writeable = PyUnicode_InternFromString("writeable");
    s_nbytes = PyUnicode_InternFromString("nbytes");
    s_tobytes = PyUnicode_InternFromString("tobytes");
    s_f_code = PyUnicode_InternFromString("f_code");
    s_f_lasti = PyUnicode_InternFromString("f_lasti");
    s_co_filename = PyUnicode_InternFromString("co_filename");
    s_f_back = PyUnicode_InternFromString("f_back");
    if (!s_flags || !s_writeable || !s_nbytes || !s_tobytes || !s_f_code || !s_f_lasti || !s_f_back || !s_co_filename)
        return NULL;
    if (!s_checked || !s_value)
        return NULL;
    if (!s_defer_on_every)
        return NULL;
    s_starts = PyUnicode_InternFromString("starts");
    s_stops = PyUnicode_InternFromString("stops");
    s_steps = PyUnicode_InternFromString("steps");
    s_shape_kw = PyUnicode_InternFromString("shape");
    index_memo = PyDict_New();
    if (!s_starts || !s_stops || !s_steps || !s_shape_kw || !index_memo)
        return NULL;
    if (!s_constants || !s_input_types || !s_structure_entry || !s_shape || !s_dtype || !s_tapes ||
        !s_enabled || !s_tape || !s_watch || !s_record || !s_kind || !s_variable_reads)
        return NULL;
    if (PyType_Ready(&id_positions_type) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module != NULL && PyModule_AddObjectRef(module, "IdPositions", (PyObject *)&id_positions_type) < 0)
        Py_CLEAR(module);
    return module;
}
