// wp.launch's hot path as a CPython extension (module _tw_launch), for both backends.
//
// A launch's host time on a GPU is the driver's cuLaunchKernel (2.5-4.5 us on the H100 host) plus
// whatever runs before it. In Python that was ~1.3 us (arguments checked and packed, a ctypes
// call); here it is a few hundred nanoseconds: the arguments are checked and packed into a stack
// buffer and handed to the backend's native submit entry (tw_cuda_submit / tw_cpu_submit, whose
// addresses Python passes in).
//
// The rule that keeps this safe: launch() either does the whole launch or returns False having
// done nothing, and Python then takes its general path, which raises the errors (naming the
// argument) and remembers a Launcher for next time. Whatever is not plainly right here (a value of
// an unexpected type, a dim given as a list, an int out of range, an unknown block size, ...) is
// such a fallback, so this file holds no error messages and no semantics of its own.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace {

typedef int (*submit_fn)(const void* rec, const char* args);

// Argument blocks up to this size are packed on the stack (CUDA's classic parameter limit).
constexpr Py_ssize_t kMaxArgs = 4096;
// tw::launch_bounds_t: int32 shape[4], int32 ndim, int64 size, uint32 mul[4], uint32 shift[4]
// (the block starts with it).
constexpr int kBoundsNdim = 16, kBoundsSize = 24, kBoundsMul = 32, kBoundsShift = 48, kBoundsBytes = 64;

// The reciprocal of a launch extent, as tilewarp.types.reciprocal computes it (launch.h uses it).
void reciprocal(uint32_t extent, uint32_t* mul, uint32_t* shift) {
    if (extent < 2) {
        *mul = *shift = 0;
        return;
    }
    uint32_t bits = 0;  // ceil(log2(extent))
    while ((1ull << bits) < extent) ++bits;
    *mul = static_cast<uint32_t>(((1ull << (31 + bits)) + extent - 1) / extent);
    *shift = bits - 1;
}

enum Kind : int {
    kArray = 0,  // an array: its token (signature, descriptor bytes) must carry the param's signature
    kBytes,      // a composite (vector, matrix, ...): an instance of exactly the param's class
    kF32, kF64, kBool, kI8, kI16, kI32, kI64, kU8, kU16, kU32, kU64,
    kKinds
};

struct Param {
    int kind;
    Py_ssize_t offset, size;
    PyObject* type;  // kArray: the signature tuple; kBytes: the class; else NULL
    long long lo, hi;  // integer kinds: the Python ints taken without overflow (launch.int_range)
};

struct Launcher {
    PyObject_VAR_HEAD
    submit_fn submit;
    PyObject* device;   // the Device this launcher serves
    PyObject* alias;    // its name, "cuda:0" or "cpu"
    PyObject* rec_for;  // rec_for(block_dim) -> address of the launch record for that block size
    PyObject* failed;   // failed(err, rec, args: bytes, n_tasks, block_dim): retry or raise
    PyObject* pending;  // a set the kernel handle goes into (CUDA: names kernels in fault messages), or None
    PyObject* handle;
    PyObject* recs;     // dict: block_dim -> record address
    PyObject* watched;  // values compiled in that must be unchanged to launch here, or NULL (watched_unchanged)
    long last_block;
    const void* last_rec;
    int tid_arity;
    Py_ssize_t args_size;
    Param params[1];
};

PyObject* g_array_type = nullptr;  // tilewarp.runtime.array.array
PyObject* g_make_token = nullptr;  // make_token(array) -> (signature, descriptor bytes) or None
PyObject* g_retired = nullptr;     // the set of destroyed objects' ids (runtime/retired.py)
PyObject* g_default_device = nullptr;  // what device=None means when no argument is an array
PyObject* g_cuda_device = nullptr;     // what device="cuda" means
PyObject* s_tw_fast = nullptr;
PyObject* s_tw_token = nullptr;
PyObject* s_device = nullptr;
PyObject* s_cuda = nullptr;

void launcher_dealloc(PyObject* self) {
    Launcher* l = reinterpret_cast<Launcher*>(self);
    for (Py_ssize_t k = 0; k < Py_SIZE(l); ++k) Py_XDECREF(l->params[k].type);
    Py_XDECREF(l->device);
    Py_XDECREF(l->alias);
    Py_XDECREF(l->rec_for);
    Py_XDECREF(l->failed);
    Py_XDECREF(l->pending);
    Py_XDECREF(l->handle);
    Py_XDECREF(l->recs);
    Py_XDECREF(l->watched);
    PyObject_Free(self);
}

PyObject* launcher_device(PyObject* self, void*) {
    PyObject* d = reinterpret_cast<Launcher*>(self)->device;
    Py_INCREF(d);
    return d;
}

PyObject* launcher_get_watched(PyObject* self, void*) {
    PyObject* w = reinterpret_cast<Launcher*>(self)->watched;
    w = w ? w : Py_None;
    Py_INCREF(w);
    return w;
}

int launcher_set_watched(PyObject* self, PyObject* value, void*) {
    if (value && value != Py_None && !(PyTuple_CheckExact(value) && PyTuple_GET_SIZE(value) % 4 == 0)) {
        PyErr_SetString(PyExc_TypeError, "watched: a tuple of (dict or cell, name or None, object, bytes or None)");
        return -1;
    }
    Launcher* l = reinterpret_cast<Launcher*>(self);
    PyObject* w = value && value != Py_None ? value : nullptr;
    Py_XINCREF(w);
    Py_XSETREF(l->watched, w);
    return 0;
}

// The values a kernel compiled in (frontend/captures.py), as (where: a module's globals or a closure
// cell, name or None for a cell, the object bound then, its bytes then for a vector or matrix, which
// change in place): all still the same, or this launch goes to the general path, which warns.
bool watched_unchanged(PyObject* w) {
    const Py_ssize_t n = PyTuple_GET_SIZE(w);
    for (Py_ssize_t k = 0; k + 3 < n; k += 4) {
        PyObject *where = PyTuple_GET_ITEM(w, k), *name = PyTuple_GET_ITEM(w, k + 1);
        PyObject *then = PyTuple_GET_ITEM(w, k + 2), *bytes = PyTuple_GET_ITEM(w, k + 3);
        PyObject* now = nullptr;
        if (name == Py_None && PyCell_Check(where)) now = PyCell_GET(where);
        else if (PyDict_Check(where)) now = PyDict_GetItemWithError(where, name);  // borrowed
        if (now != then) {
            PyErr_Clear();
            return false;
        }
        if (PyBytes_CheckExact(bytes)) {
            Py_buffer view;
            if (PyObject_GetBuffer(now, &view, PyBUF_SIMPLE) != 0) {
                PyErr_Clear();
                return false;
            }
            bool same = view.len == PyBytes_GET_SIZE(bytes) && memcmp(view.buf, PyBytes_AS_STRING(bytes), view.len) == 0;
            PyBuffer_Release(&view);
            if (!same) return false;
        }
    }
    return true;
}

PyGetSetDef launcher_getset[] = {
    {"device", launcher_device, nullptr, "the device this launcher serves", nullptr},
    {"watched", launcher_get_watched, launcher_set_watched, "values compiled in, checked per launch", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject LauncherType = {PyVarObject_HEAD_INIT(nullptr, 0) "_tw_launch.Launcher"};

// ---- scalars: the conversions the general path makes (runtime/launch.py), else fallback ----
// An int must lie in the parameter's range (Param::lo..hi, plus up to 2**64 - 1 for uint64; unsigned
// kinds take negatives as their two's complement bits); outside it Python raises the error.

bool put_float(PyObject* v, double* out) {
    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AS_DOUBLE(v);
        return true;
    }
    if (PyLong_CheckExact(v) || PyBool_Check(v)) {
        *out = PyLong_AsDouble(v);
        if (*out == -1.0 && PyErr_Occurred()) {  // too large for a double: Python raises the error
            PyErr_Clear();
            return false;
        }
        return true;
    }
    return false;
}

bool put_scalar(const Param& p, PyObject* v, char* at) {
    if (p.kind == kF32 || p.kind == kF64) {
        double d;
        if (!put_float(v, &d)) return false;
        if (p.kind == kF64) {
            memcpy(at, &d, 8);
            return true;
        }
        float f = static_cast<float>(d);
        // ctypes rounds a finite double beyond float32's range to inf, where a C cast is undefined
        if (d == d && (d > 3.4028234663852886e38 || d < -3.4028234663852886e38)) return false;
        memcpy(at, &f, 4);
        return true;
    }
    if (!PyLong_CheckExact(v) && !PyBool_Check(v)) return false;
    if (p.kind == kBool) {  // any int, by its truth
        at[0] = PyObject_IsTrue(v) ? 1 : 0;
        return true;
    }
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    unsigned long long bits = static_cast<unsigned long long>(x);  // two's complement
    if (overflow > 0 && p.kind == kU64) {  // 2**63 .. 2**64 - 1
        bits = PyLong_AsUnsignedLongLong(v);
        if (bits == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
            PyErr_Clear();
            return false;
        }
    } else if (overflow || x < p.lo || x > p.hi) {
        return false;
    }
    // a destroyed object's id: the Python path raises the error that names the argument
    if (p.kind == kU64 && g_retired && PySet_GET_SIZE(g_retired) > 0 && PySet_Contains(g_retired, v) == 1) return false;
    memcpy(at, &bits, static_cast<size_t>(p.size));  // little-endian: the low bytes
    return true;
}

bool put_array(const Param& p, PyObject* v, char* at) {
    if (Py_TYPE(v) != reinterpret_cast<PyTypeObject*>(g_array_type)) return false;
    PyObject* token = PyObject_GetAttr(v, s_tw_token);
    if (!token) {
        PyErr_Clear();
        return false;
    }
    if (token == Py_None) {  // not launched since it was made or its gradient changed
        Py_DECREF(token);
        Py_INCREF(v);  // Python runs here: the caller's argument list may change meanwhile
        token = PyObject_CallOneArg(g_make_token, v);
        Py_DECREF(v);
        if (!token) {
            PyErr_Clear();
            return false;
        }
    }
    bool ok = PyTuple_CheckExact(token) && PyTuple_GET_SIZE(token) == 2 && PyTuple_GET_ITEM(token, 0) == p.type;
    if (ok) {
        PyObject* bytes = PyTuple_GET_ITEM(token, 1);
        ok = PyBytes_CheckExact(bytes) && PyBytes_GET_SIZE(bytes) == p.size;
        if (ok) memcpy(at, PyBytes_AS_STRING(bytes), static_cast<size_t>(p.size));
    }
    Py_DECREF(token);
    return ok;
}

bool put_bytes(const Param& p, PyObject* v, char* at) {
    if (Py_TYPE(v) != reinterpret_cast<PyTypeObject*>(p.type)) return false;
    Py_buffer view;
    if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) != 0) {
        PyErr_Clear();
        return false;
    }
    bool ok = view.len == p.size;
    if (ok) memcpy(at, view.buf, static_cast<size_t>(p.size));
    PyBuffer_Release(&view);
    return ok;
}

bool put_value(const Param& p, PyObject* v, char* at) {
    return p.kind == kArray ? put_array(p, v, at) : p.kind == kBytes ? put_bytes(p, v, at) : put_scalar(p, v, at);
}

// dim (an int or a tuple of 1-4 ints, each in [0, 2**31)) -> the launch bounds at the block's
// start; false for anything else, or a tid() arity the launch does not match.
bool put_bounds(PyObject* dim, int tid_arity, char* block, int64_t* size) {
    int32_t shape[4] = {1, 1, 1, 1};
    int32_t ndim;
    PyObject* const* items;
    if (PyLong_CheckExact(dim)) {
        items = &dim;
        ndim = 1;
    } else if (PyTuple_CheckExact(dim) && PyTuple_GET_SIZE(dim) >= 1 && PyTuple_GET_SIZE(dim) <= 4) {
        items = PySequence_Fast_ITEMS(dim);
        ndim = static_cast<int32_t>(PyTuple_GET_SIZE(dim));
    } else {
        return false;
    }
    if (tid_arity > ndim) return false;  // fewer: the trailing dimensions fold away (launch_tiled)
    int64_t n = 1;
    for (int32_t k = 0; k < ndim; ++k) {
        if (!PyLong_CheckExact(items[k])) return false;
        long long d = PyLong_AsLongLong(items[k]);
        if (d < 0 || d > 2147483647LL) {
            PyErr_Clear();
            return false;
        }
        shape[k] = static_cast<int32_t>(d);
        n *= d;
    }
    uint32_t mul[4], shift[4];
    for (int k = 0; k < 4; ++k) reciprocal(static_cast<uint32_t>(shape[k]), &mul[k], &shift[k]);
    memcpy(block, shape, sizeof shape);
    memcpy(block + kBoundsNdim, &ndim, 4);
    memcpy(block + kBoundsSize, &n, 8);
    memcpy(block + kBoundsMul, mul, sizeof mul);
    memcpy(block + kBoundsShift, shift, sizeof shift);
    *size = n;
    return true;
}

// The launcher in kernel._tw_fast (a list) that serves `device` as given to wp.launch, or NULL.
Launcher* find_launcher(PyObject* fast, PyObject* device, PyObject* inputs, PyObject* outputs) {
    PyObject* dev = nullptr;  // borrowed or owned below
    PyObject* owned = nullptr;
    if (device == Py_None) {
        PyObject* lists[2] = {inputs, outputs};
        for (PyObject* seq : lists) {
            for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq) && !dev; ++k) {
                PyObject* v = PySequence_Fast_ITEMS(seq)[k];
                if (Py_TYPE(v) == reinterpret_cast<PyTypeObject*>(g_array_type)) {
                    owned = PyObject_GetAttr(v, s_device);
                    if (!owned) {
                        PyErr_Clear();
                        return nullptr;
                    }
                    if (owned != Py_None) dev = owned;
                    else Py_CLEAR(owned);
                } else if (PyObject_TypeCheck(v, reinterpret_cast<PyTypeObject*>(g_array_type))) {
                    return nullptr;  // a subclass of array: Python decides
                }
            }
            if (dev) break;
        }
        if (!dev) dev = g_default_device;
    } else if (PyUnicode_CheckExact(device)) {
        if (PyUnicode_Compare(device, s_cuda) == 0) {
            dev = g_cuda_device;
        } else {
            for (Py_ssize_t k = 0; k < PyList_GET_SIZE(fast); ++k) {
                Launcher* l = reinterpret_cast<Launcher*>(PyList_GET_ITEM(fast, k));
                if (l->alias == device || PyUnicode_Compare(l->alias, device) == 0) return l;
            }
            PyErr_Clear();
            return nullptr;
        }
    } else {
        dev = device;  // a Device (anything else matches no launcher)
    }
    Launcher* found = nullptr;
    for (Py_ssize_t k = 0; dev && k < PyList_GET_SIZE(fast) && !found; ++k) {
        Launcher* l = reinterpret_cast<Launcher*>(PyList_GET_ITEM(fast, k));
        if (l->device == dev) found = l;
    }
    Py_XDECREF(owned);
    return found;
}

const void* record_for(Launcher* l, long block_dim) {
    if (block_dim == l->last_block) return l->last_rec;
    PyObject* key = PyLong_FromLong(block_dim);
    if (!key) return nullptr;
    PyObject* rec = PyDict_GetItemWithError(l->recs, key);  // borrowed
    if (rec) Py_INCREF(rec);
    else if (!PyErr_Occurred()) {
        rec = PyObject_CallOneArg(l->rec_for, key);  // raises for an invalid block size
        if (rec && PyDict_SetItem(l->recs, key, rec) != 0) Py_CLEAR(rec);
    }
    Py_DECREF(key);
    if (!rec) return nullptr;
    const void* addr = PyLong_AsVoidPtr(rec);
    Py_DECREF(rec);
    if (!addr && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "launch record at address 0");
    if (!addr) return nullptr;
    l->last_block = block_dim;
    l->last_rec = addr;
    return addr;
}

// launch(kernel, dim, inputs, outputs, device, block_dim) -> True (launched, or nothing to launch)
// or False (nothing done: take the general path).
PyObject* launch(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "launch() takes 6 arguments");
        return nullptr;
    }
    PyObject *kernel = args[0], *dim = args[1], *inputs = args[2], *outputs = args[3];
    PyObject *device = args[4], *block_obj = args[5];
    if (!(PyList_CheckExact(inputs) || PyTuple_CheckExact(inputs)) ||
        !(PyList_CheckExact(outputs) || PyTuple_CheckExact(outputs)) || !PyLong_CheckExact(block_obj))
        Py_RETURN_FALSE;
    PyObject* fast = PyObject_GetAttr(kernel, s_tw_fast);
    if (!fast) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    Launcher* l = PyList_CheckExact(fast) ? find_launcher(fast, device, inputs, outputs) : nullptr;
    Py_XINCREF(l);  // another thread may drop it from the list while the GIL is released
    Py_DECREF(fast);
    if (!l) Py_RETURN_FALSE;
    if (l->watched && !watched_unchanged(l->watched)) {
        Py_DECREF(l);
        Py_RETURN_FALSE;
    }

    PyObject* result = Py_False;
    Py_ssize_t n_in = PySequence_Fast_GET_SIZE(inputs), n_out = PySequence_Fast_GET_SIZE(outputs);
    long block_dim = PyLong_AsLong(block_obj);
    alignas(16) char block[kMaxArgs];
    int64_t n_tasks = 0;
    if (block_dim > 0 && block_dim <= 2147483647L && n_in + n_out == Py_SIZE(l)) {
        memset(block, 0, static_cast<size_t>(l->args_size));
        bool ok = put_bounds(dim, l->tid_arity, block, &n_tasks);
        for (Py_ssize_t k = 0; ok && k < Py_SIZE(l); ++k) {
            const Param& p = l->params[k];
            // read afresh each time, with the lengths checked: making an array's token runs Python,
            // during which another thread may change a list of arguments
            PyObject* seq = k < n_in ? inputs : outputs;
            Py_ssize_t at_k = k < n_in ? k : k - n_in;
            ok = PySequence_Fast_GET_SIZE(inputs) == n_in && PySequence_Fast_GET_SIZE(outputs) == n_out;
            if (!ok) break;
            PyObject* v = PySequence_Fast_ITEMS(seq)[at_k];
            ok = put_value(p, v, block + p.offset);
        }
        ok = ok && PySequence_Fast_GET_SIZE(inputs) == n_in && PySequence_Fast_GET_SIZE(outputs) == n_out;
        if (ok) result = Py_True;
    } else if (PyErr_Occurred()) {
        PyErr_Clear();
    }
    if (result == Py_True && n_tasks > 0) {
        const void* rec = record_for(l, block_dim);
        if (!rec || (l->pending != Py_None && PySet_Add(l->pending, l->handle) != 0)) {
            result = nullptr;
        } else {
            int err;
            // A CPU kernel runs inside submit, and a full GPU queue blocks in it; releasing the GIL
            // costs nothing measurable next to the driver call (H100 A/B, benchmarks/RESULTS.md).
            Py_BEGIN_ALLOW_THREADS
            err = l->submit(rec, block);
            Py_END_ALLOW_THREADS
            if (err) {
                PyObject* r = PyObject_CallFunction(l->failed, "iNy#Ll", err,
                                                    PyLong_FromVoidPtr(const_cast<void*>(rec)), block,
                                                    l->args_size, static_cast<long long>(n_tasks), block_dim);
                if (!r) result = nullptr;
                Py_XDECREF(r);
            }
        }
    }
    Py_DECREF(l);
    Py_XINCREF(result);
    return result;
}

int kind_size(int kind) {
    static const int sizes[kKinds] = {0, 0, 4, 8, 1, 1, 2, 4, 8, 1, 2, 4, 8};
    return sizes[kind];
}

// make_launcher(submit_address, device, alias, params, args_size, tid_arity, rec_for, failed,
//               pending, handle) with params a list of (kind, offset, size, type or None).
PyObject* make_launcher(PyObject*, PyObject* args) {
    unsigned long long submit;
    PyObject *device, *alias, *params, *rec_for, *failed, *pending, *handle;
    Py_ssize_t args_size;
    int tid_arity;
    if (!PyArg_ParseTuple(args, "KOUO!niOOOO", &submit, &device, &alias, &PyList_Type, &params, &args_size,
                          &tid_arity, &rec_for, &failed, &pending, &handle))
        return nullptr;
    if (!submit || args_size < kBoundsBytes || args_size > kMaxArgs) {
        PyErr_SetString(PyExc_ValueError, "make_launcher: bad submit address or argument block size");
        return nullptr;
    }
    Py_ssize_t n = PyList_GET_SIZE(params);
    Launcher* l = PyObject_NewVar(Launcher, &LauncherType, n);
    if (!l) return nullptr;
    for (Py_ssize_t k = 0; k < n; ++k) l->params[k].type = nullptr;
    l->device = l->alias = l->rec_for = l->failed = l->pending = l->handle = l->recs = l->watched = nullptr;
    PyObject* self = reinterpret_cast<PyObject*>(l);
    for (Py_ssize_t k = 0; k < n; ++k) {
        Param& p = l->params[k];
        PyObject* type;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(params, k), "innO", &p.kind, &p.offset, &p.size, &type)) {
            Py_DECREF(self);
            return nullptr;
        }
        bool scalar = p.kind > kBytes && p.kind < kKinds;
        bool sized = p.kind == kArray || p.kind == kBytes || (scalar && p.size == kind_size(p.kind));
        if (p.kind < 0 || p.kind >= kKinds || !sized || p.offset < kBoundsBytes || p.size <= 0 ||
            p.offset + p.size > args_size || (p.kind == kBytes && !PyType_Check(type))) {
            Py_DECREF(self);
            PyErr_Format(PyExc_ValueError, "make_launcher: bad parameter %zd", k);
            return nullptr;
        }
        Py_INCREF(type);
        p.type = type;
        int bits = static_cast<int>(8 * p.size);
        bool is_unsigned = p.kind >= kU8;
        p.lo = bits >= 64 ? LLONG_MIN : -(1LL << (bits - 1));
        p.hi = bits >= 64 ? LLONG_MAX : (1LL << (is_unsigned ? bits : bits - 1)) - 1;
    }
    l->submit = reinterpret_cast<submit_fn>(static_cast<uintptr_t>(submit));
    PyObject* refs[] = {device, alias, rec_for, failed, pending, handle};
    for (PyObject* r : refs) Py_INCREF(r);
    l->device = device, l->alias = alias, l->rec_for = rec_for, l->failed = failed;
    l->pending = pending, l->handle = handle;
    l->recs = PyDict_New();
    l->last_block = 0;
    l->last_rec = nullptr;
    l->tid_arity = tid_arity;
    l->args_size = args_size;
    if (!l->recs) {
        Py_DECREF(self);
        return nullptr;
    }
    return self;
}

void set_ref(PyObject** slot, PyObject* value) {
    Py_XINCREF(value);
    Py_XSETREF(*slot, value);
}

// configure(array_type, make_token, retired_ids): once, at import.
PyObject* configure(PyObject*, PyObject* args) {
    PyObject *array_type, *make_token, *retired;
    if (!PyArg_ParseTuple(args, "O!OO!", &PyType_Type, &array_type, &make_token, &PySet_Type, &retired)) return nullptr;
    set_ref(&g_array_type, array_type);
    set_ref(&g_make_token, make_token);
    set_ref(&g_retired, retired);
    Py_RETURN_NONE;
}

// set_defaults(default_device, cuda_device): what device=None (no array arguments) and
// device="cuda" mean now; None where that is not settled (Python then decides).
PyObject* set_defaults(PyObject*, PyObject* args) {
    PyObject *default_device, *cuda_device;
    if (!PyArg_ParseTuple(args, "OO", &default_device, &cuda_device)) return nullptr;
    set_ref(&g_default_device, default_device == Py_None ? nullptr : default_device);
    set_ref(&g_cuda_device, cuda_device == Py_None ? nullptr : cuda_device);
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(launch)), METH_FASTCALL,
     "launch(kernel, dim, inputs, outputs, device, block_dim) -> bool: True when launched here"},
    {"make_launcher", make_launcher, METH_VARARGS, "a Launcher for one compiled kernel on one device"},
    {"configure", configure, METH_VARARGS, "configure(array_type, make_token, retired_ids)"},
    {"set_defaults", set_defaults, METH_VARARGS, "set_defaults(default_device, cuda_device)"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_tw_launch", "wp.launch's native hot path", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__tw_launch(void) {
    LauncherType.tp_basicsize = offsetof(Launcher, params);
    LauncherType.tp_itemsize = sizeof(Param);
    LauncherType.tp_dealloc = launcher_dealloc;
    LauncherType.tp_flags = Py_TPFLAGS_DEFAULT;
    LauncherType.tp_doc = "One compiled kernel on one device: its argument layout and native submit entry.";
    LauncherType.tp_getset = launcher_getset;
    if (PyType_Ready(&LauncherType) < 0) return nullptr;
    s_tw_fast = PyUnicode_InternFromString("_tw_fast");
    s_tw_token = PyUnicode_InternFromString("_tw_token");
    s_device = PyUnicode_InternFromString("device");
    s_cuda = PyUnicode_InternFromString("cuda");
    if (!s_tw_fast || !s_tw_token || !s_device || !s_cuda) return nullptr;
    PyObject* m = PyModule_Create(&module_def);
    if (!m) return nullptr;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(m, "Launcher", reinterpret_cast<PyObject*>(&LauncherType)) < 0) {
        Py_DECREF(&LauncherType);
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
