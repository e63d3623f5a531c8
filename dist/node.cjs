var __defProp = Object.defineProperty;
var __getOwnPropDesc = Object.getOwnPropertyDescriptor;
var __getOwnPropNames = Object.getOwnPropertyNames;
var __hasOwnProp = Object.prototype.hasOwnProperty;
var __export = (target, all) => {
  for (var name in all)
    __defProp(target, name, { get: all[name], enumerable: true });
};
var __copyProps = (to, from, except, desc) => {
  if (from && typeof from === "object" || typeof from === "function") {
    for (let key of __getOwnPropNames(from))
      if (!__hasOwnProp.call(to, key) && key !== except)
        __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });
  }
  return to;
};
var __toCommonJS = (mod) => __copyProps(__defProp({}, "__esModule", { value: true }), mod);

// js/cjs.mjs
var cjs_exports = {};
__export(cjs_exports, {
  LeaseError: () => LeaseError,
  LeaseEvent: () => LeaseEvent,
  Lessor: () => Lessor,
  init: () => init
});
module.exports = __toCommonJS(cjs_exports);
var import_node_fs = require("node:fs");
var import_node_path = require("node:path");

// pkg/edge_lease.js
var RawLessor = class _RawLessor {
  static __wrap(ptr) {
    const obj = Object.create(_RawLessor.prototype);
    obj.__wbg_ptr = ptr;
    RawLessorFinalization.register(obj, obj.__wbg_ptr, obj);
    return obj;
  }
  __destroy_into_raw() {
    const ptr = this.__wbg_ptr;
    this.__wbg_ptr = 0;
    RawLessorFinalization.unregister(this);
    return ptr;
  }
  free() {
    const ptr = this.__destroy_into_raw();
    wasm.__wbg_rawlessor_free(ptr, 0);
  }
  /**
   * @param {number} now
   * @param {number} id_hi
   * @param {number} id_lo
   * @param {number} remaining_ms
   */
  checkpoint(now, id_hi, id_lo, remaining_ms) {
    const ret = wasm.rawlessor_checkpoint(this.__wbg_ptr, now, id_hi, id_lo, remaining_ms);
    if (ret[1]) {
      throw takeFromExternrefTable0(ret[0]);
    }
  }
  /**
   * Returns the revision; scratch: [deleted, lease hi, lease lo].
   * @param {number} now
   * @param {string} key
   * @returns {number}
   */
  delete(now, key) {
    const val2 = +now;
    const ptr0 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.rawlessor_delete(this.__wbg_ptr, val2, ptr0, len0);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return ret[0];
  }
  /**
   * @param {number} now
   */
  demote(now) {
    wasm.rawlessor_demote(this.__wbg_ptr, now);
  }
  /**
   * Whether the key is live; if so scratch: [create revision, mod
   * revision, version, lease hi, lease lo, value pointer, value length,
   * text]. The wrapper reads the value straight from wasm memory before
   * its next call: decoding short values itself is several times faster
   * than a returned string (TextDecoder), and bytes are copied only once.
   * @param {number} now
   * @param {string} key
   * @returns {boolean}
   */
  get(now, key) {
    const val2 = +now;
    const ptr0 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.rawlessor_get(this.__wbg_ptr, val2, ptr0, len0);
    return ret !== 0;
  }
  /**
   * scratch: [id hi, id lo, granted ttl].
   * @param {number} now
   * @param {number} ttl
   * @param {number} id_hi
   * @param {number} id_lo
   */
  grant(now, ttl, id_hi, id_lo) {
    const ret = wasm.rawlessor_grant(this.__wbg_ptr, now, ttl, id_hi, id_lo);
    if (ret[1]) {
      throw takeFromExternrefTable0(ret[0]);
    }
  }
  /**
   * @returns {boolean}
   */
  is_primary() {
    const ret = wasm.rawlessor_is_primary(this.__wbg_ptr);
    return ret !== 0;
  }
  /**
   * Live lease ids as [hi, lo, hi, lo, ...], soonest deadline first.
   * @param {number} now
   * @returns {Uint32Array}
   */
  leases(now) {
    const ret = wasm.rawlessor_leases(this.__wbg_ptr, now);
    return ret;
  }
  /**
   * The module's `WebAssembly.Memory`, for reading values in place.
   * @returns {any}
   */
  static memory() {
    const ret = wasm.rawlessor_memory();
    return ret;
  }
  /**
   * Bytes of wasm linear memory (for benchmarks).
   * @returns {number}
   */
  static memory_bytes() {
    const ret = wasm.rawlessor_memory_bytes();
    return ret;
  }
  /**
   * @param {number} min_ttl
   * @param {number} revoke_rate
   * @param {number} max_key
   * @param {number} max_value
   * @param {number} max_keys
   */
  constructor(min_ttl, revoke_rate, max_key, max_value, max_keys) {
    const ret = wasm.rawlessor_new(min_ttl, revoke_rate, max_key, max_value, max_keys);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    this.__wbg_ptr = ret[0];
    RawLessorFinalization.register(this, this.__wbg_ptr, this);
    return this;
  }
  /**
   * Epoch ms, or NaN when nothing is scheduled.
   * @returns {number}
   */
  next_deadline() {
    const ret = wasm.rawlessor_next_deadline(this.__wbg_ptr);
    return ret;
  }
  /**
   * @param {number} now
   * @param {number} extend_ms
   */
  promote(now, extend_ms) {
    const ret = wasm.rawlessor_promote(this.__wbg_ptr, now, extend_ms);
    if (ret[1]) {
      throw takeFromExternrefTable0(ret[0]);
    }
  }
  /**
   * @param {number} now
   * @param {string} key
   * @param {Uint8Array | number[]} value
   * @param {number} lease_hi
   * @param {number} lease_lo
   * @param {boolean} if_absent
   * @returns {number}
   */
  put_bytes(now, key, value, lease_hi, lease_lo, if_absent) {
    const val3 = +now;
    const val4 = +lease_hi;
    const val5 = +lease_lo;
    const val6 = +if_absent;
    let ptr0, len0, ptr1, len1;
    try {
      ptr0 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
      len0 = WASM_VECTOR_LEN;
      ptr1 = passArray8ToWasm0(value, wasm.__wbindgen_malloc);
      len1 = WASM_VECTOR_LEN;
    } catch (e) {
      if (ptr1) {
        wasm.__wbindgen_free(ptr1, len1 * 1, 1);
      }
      if (ptr0) {
        wasm.__wbindgen_free(ptr0, len0 * 1, 1);
      }
      throw e;
    }
    const ret = wasm.rawlessor_put_bytes(this.__wbg_ptr, val3, ptr0, len0, ptr1, len1, val4, val5, val6);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return ret[0];
  }
  /**
   * Returns the revision; scratch[0] = 1 if the key was created (for an
   * if-absent put: written), else 0.
   * @param {number} now
   * @param {string} key
   * @param {string} value
   * @param {number} lease_hi
   * @param {number} lease_lo
   * @param {boolean} if_absent
   * @returns {number}
   */
  put_str(now, key, value, lease_hi, lease_lo, if_absent) {
    const val3 = +now;
    const val4 = +lease_hi;
    const val5 = +lease_lo;
    const val6 = +if_absent;
    let ptr0, len0, ptr1, len1;
    try {
      ptr0 = passStringToWasm0(key, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
      len0 = WASM_VECTOR_LEN;
      ptr1 = passStringToWasm0(value, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
      len1 = WASM_VECTOR_LEN;
    } catch (e) {
      if (ptr1) {
        wasm.__wbindgen_free(ptr1, len1 * 1, 1);
      }
      if (ptr0) {
        wasm.__wbindgen_free(ptr0, len0 * 1, 1);
      }
      throw e;
    }
    const ret = wasm.rawlessor_put_str(this.__wbg_ptr, val3, ptr0, len0, ptr1, len1, val4, val5, val6);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return ret[0];
  }
  /**
   * Live entries under `prefix`, sorted: [key, value, create, mod, version, lease hi, lease lo] each.
   * @param {number} now
   * @param {string} prefix
   * @returns {Array<any>}
   */
  range(now, prefix) {
    const val2 = +now;
    const ptr0 = passStringToWasm0(prefix, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
    const len0 = WASM_VECTOR_LEN;
    const ret = wasm.rawlessor_range(this.__wbg_ptr, val2, ptr0, len0);
    return ret;
  }
  /**
   * @param {number} now
   * @param {number} id_hi
   * @param {number} id_lo
   * @returns {number}
   */
  renew(now, id_hi, id_lo) {
    const ret = wasm.rawlessor_renew(this.__wbg_ptr, now, id_hi, id_lo);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return ret[0];
  }
  /**
   * Rebuilds from stored `[key, value]` pairs (values Uint8Array or
   * string); with `write`, every later change is first handed to it.
   * @param {number} min_ttl
   * @param {number} revoke_rate
   * @param {number} max_key
   * @param {number} max_value
   * @param {number} max_keys
   * @param {Array<any>} entries
   * @param {number} now
   * @param {Function | null} [write]
   * @returns {RawLessor}
   */
  static restore(min_ttl, revoke_rate, max_key, max_value, max_keys, entries, now, write) {
    const val1 = +min_ttl;
    const val2 = +revoke_rate;
    const val3 = +max_key;
    const val4 = +max_value;
    const val5 = +max_keys;
    const val6 = +now;
    const ret = wasm.rawlessor_restore(val1, val2, val3, val4, val5, entries, val6, isLikeNone(write) ? 0 : addToExternrefTable0(write));
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return _RawLessor.__wrap(ret[0]);
  }
  /**
   * @returns {number}
   */
  revision() {
    const ret = wasm.rawlessor_revision(this.__wbg_ptr);
    return ret;
  }
  /**
   * Returns the flat form of `revoked_flat`; the keys via `take_keys`.
   * @param {number} now
   * @param {number} id_hi
   * @param {number} id_lo
   * @returns {Float64Array}
   */
  revoke(now, id_hi, id_lo) {
    const ret = wasm.rawlessor_revoke(this.__wbg_ptr, now, id_hi, id_lo);
    if (ret[2]) {
      throw takeFromExternrefTable0(ret[1]);
    }
    return takeFromExternrefTable0(ret[0]);
  }
  /**
   * A view of the scratch array. It lives in wasm memory: when memory
   * grows the view empties and the caller asks again.
   * @returns {Float64Array}
   */
  scratch() {
    const ret = wasm.rawlessor_scratch(this.__wbg_ptr);
    return ret;
  }
  /**
   * All state as storage entries: [[key, Uint8Array], ...].
   * @returns {Array<any>}
   */
  snapshot() {
    const ret = wasm.rawlessor_snapshot(this.__wbg_ptr);
    return ret;
  }
  /**
   * The keys of the last `revoke` or `tick`, concatenated.
   * @returns {string}
   */
  take_keys() {
    let deferred1_0;
    let deferred1_1;
    try {
      const ret = wasm.rawlessor_take_keys(this.__wbg_ptr);
      deferred1_0 = ret[0];
      deferred1_1 = ret[1];
      return getStringFromWasm0(ret[0], ret[1]);
    } finally {
      wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
    }
  }
  /**
   * @returns {any}
   */
  take_tick_error() {
    const ret = wasm.rawlessor_take_tick_error(this.__wbg_ptr);
    return ret;
  }
  /**
   * Expired leases in the flat form of `revoked_flat`, keys via
   * `take_keys`. If storage stopped the tick early, `take_tick_error` has
   * the error.
   * @param {number} now
   * @returns {Float64Array}
   */
  tick(now) {
    const ret = wasm.rawlessor_tick(this.__wbg_ptr, now);
    return ret;
  }
  /**
   * Undefined if not found; else the keys (empty unless asked), with
   * scratch: [ttl, ttl ms, granted ttl].
   * @param {number} now
   * @param {number} id_hi
   * @param {number} id_lo
   * @param {boolean} with_keys
   * @returns {any}
   */
  time_to_live(now, id_hi, id_lo, with_keys) {
    const ret = wasm.rawlessor_time_to_live(this.__wbg_ptr, now, id_hi, id_lo, with_keys);
    return ret;
  }
};
if (Symbol.dispose) RawLessor.prototype[Symbol.dispose] = RawLessor.prototype.free;
function __wbg_get_imports() {
  const import0 = {
    __proto__: null,
    __wbg___wbindgen_memory_17a1178bc3328ea3: function() {
      const ret = wasm.memory;
      return ret;
    },
    __wbg___wbindgen_string_get_7ce8eee7fd327545: function(arg0, arg1) {
      const obj = arg1;
      const ret = typeof obj === "string" ? obj : void 0;
      var ptr1 = isLikeNone(ret) ? 0 : passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
      var len1 = WASM_VECTOR_LEN;
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
      getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
    },
    __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
      throw new Error(getStringFromWasm0(arg0, arg1));
    },
    __wbg_call_a410eb4b59ed5965: function() {
      return handleError(function(arg0, arg1, arg2) {
        const ret = arg0.call(arg1, arg2);
        return ret;
      }, arguments);
    },
    __wbg_getRandomValues_8b6f1f663e6f188d: function() {
      return handleError(function(arg0, arg1) {
        globalThis.crypto.getRandomValues(getArrayU8FromWasm0(arg0, arg1));
      }, arguments);
    },
    __wbg_get_d7176cfb76d71114: function(arg0, arg1) {
      const ret = arg0[arg1 >>> 0];
      return ret;
    },
    __wbg_get_unchecked_e6325ad374eff861: function(arg0, arg1) {
      const ret = arg0[arg1 >>> 0];
      return ret;
    },
    __wbg_instanceof_Error_74e3cca0c4a69161: function(arg0) {
      let result;
      try {
        result = arg0 instanceof Error;
      } catch (_) {
        result = false;
      }
      const ret = result;
      return ret;
    },
    __wbg_length_186163212ffe79c3: function(arg0) {
      const ret = arg0.length;
      return ret;
    },
    __wbg_length_b03a0fabb109b1e9: function(arg0) {
      const ret = arg0.length;
      return ret;
    },
    __wbg_message_43d8c8f1d543a349: function(arg0) {
      const ret = arg0.message;
      return ret;
    },
    __wbg_new_37eb45aaf5eeb820: function() {
      const ret = new Array();
      return ret;
    },
    __wbg_new_787b9fb330d55d78: function(arg0, arg1) {
      const ret = new Error(getStringFromWasm0(arg0, arg1));
      return ret;
    },
    __wbg_new_cd4348290afae586: function() {
      const ret = new Object();
      return ret;
    },
    __wbg_new_from_slice_3512352010266e02: function(arg0, arg1) {
      const ret = new Uint32Array(getArrayU32FromWasm0(arg0, arg1));
      return ret;
    },
    __wbg_new_from_slice_aaf85a9746711968: function(arg0, arg1) {
      const ret = new Float64Array(getArrayF64FromWasm0(arg0, arg1));
      return ret;
    },
    __wbg_new_from_slice_b8daf545a41c6aa0: function(arg0, arg1) {
      const ret = new Uint8Array(getArrayU8FromWasm0(arg0, arg1));
      return ret;
    },
    __wbg_of_c39e96925d701310: function(arg0, arg1, arg2, arg3, arg4) {
      const ret = Array.of(arg0, arg1, arg2, arg3, arg4);
      return ret;
    },
    __wbg_of_e7ea0fcd535c1444: function(arg0, arg1) {
      const ret = Array.of(arg0, arg1);
      return ret;
    },
    __wbg_prototypesetcall_13162965d1fe7aa3: function(arg0, arg1, arg2) {
      Uint8Array.prototype.set.call(getArrayU8FromWasm0(arg0, arg1), arg2);
    },
    __wbg_push_c9f4893fc209f768: function(arg0, arg1) {
      const ret = arg0.push(arg1);
      return ret;
    },
    __wbg_set_2793479888329cb6: function() {
      return handleError(function(arg0, arg1, arg2) {
        const ret = Reflect.set(arg0, arg1, arg2);
        return ret;
      }, arguments);
    },
    __wbindgen_generic_0000000000000001: function(arg0) {
      const ret = arg0;
      return ret;
    },
    __wbindgen_generic_0000000000000002: function(arg0, arg1) {
      const ret = getArrayF64FromWasm0(arg0, arg1);
      return ret;
    },
    __wbindgen_generic_0000000000000003: function(arg0, arg1) {
      const ret = getStringFromWasm0(arg0, arg1);
      return ret;
    },
    __wbindgen_init_externref_table: function() {
      const table = wasm.__wbindgen_externrefs;
      table.set(0, void 0);
      table.set(1024, void 0);
      table.set(1025, null);
      table.set(1026, true);
      table.set(1027, false);
    }
  };
  return {
    __proto__: null,
    "./edge_lease_bg.js": import0
  };
}
var RawLessorFinalization = typeof FinalizationRegistry === "undefined" ? { register: () => {
}, unregister: () => {
} } : new FinalizationRegistry((ptr) => wasm.__wbg_rawlessor_free(ptr, 1));
function addToExternrefTable0(obj) {
  const idx = wasm.__externref_table_alloc();
  wasm.__wbindgen_externrefs.set(idx, obj);
  return idx;
}
function getArrayF64FromWasm0(ptr, len) {
  ptr = ptr >>> 0;
  return getFloat64ArrayMemory0().subarray(ptr / 8, ptr / 8 + len);
}
function getArrayU32FromWasm0(ptr, len) {
  ptr = ptr >>> 0;
  return getUint32ArrayMemory0().subarray(ptr / 4, ptr / 4 + len);
}
function getArrayU8FromWasm0(ptr, len) {
  ptr = ptr >>> 0;
  return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);
}
var cachedDataViewMemory0 = null;
function getDataViewMemory0() {
  if (cachedDataViewMemory0 === null || cachedDataViewMemory0.buffer.detached === true || cachedDataViewMemory0.buffer.detached === void 0 && cachedDataViewMemory0.buffer !== wasm.memory.buffer) {
    cachedDataViewMemory0 = new DataView(wasm.memory.buffer);
  }
  return cachedDataViewMemory0;
}
var cachedFloat64ArrayMemory0 = null;
function getFloat64ArrayMemory0() {
  if (cachedFloat64ArrayMemory0 === null || cachedFloat64ArrayMemory0.byteLength === 0) {
    cachedFloat64ArrayMemory0 = new Float64Array(wasm.memory.buffer);
  }
  return cachedFloat64ArrayMemory0;
}
function getStringFromWasm0(ptr, len) {
  ptr = ptr >>> 0;
  return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}
var cachedUint32ArrayMemory0 = null;
function getUint32ArrayMemory0() {
  if (cachedUint32ArrayMemory0 === null || cachedUint32ArrayMemory0.byteLength === 0) {
    cachedUint32ArrayMemory0 = new Uint32Array(wasm.memory.buffer);
  }
  return cachedUint32ArrayMemory0;
}
var cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
  if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
    cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
  }
  return cachedUint8ArrayMemory0;
}
function handleError(f, args) {
  try {
    return f.apply(this, args);
  } catch (e) {
    const idx = addToExternrefTable0(e);
    wasm.__wbindgen_exn_store(idx);
  }
}
function isLikeNone(x) {
  return x === void 0 || x === null;
}
function passArray8ToWasm0(arg, malloc) {
  const ptr = malloc(arg.length * 1, 1) >>> 0;
  getUint8ArrayMemory0().set(arg, ptr / 1);
  WASM_VECTOR_LEN = arg.length;
  return ptr;
}
function passStringToWasm0(arg, malloc, realloc) {
  if (realloc === void 0) {
    const buf = cachedTextEncoder.encode(arg);
    const ptr2 = malloc(buf.length, 1) >>> 0;
    getUint8ArrayMemory0().subarray(ptr2, ptr2 + buf.length).set(buf);
    WASM_VECTOR_LEN = buf.length;
    return ptr2;
  }
  let len = arg.length;
  let ptr = malloc(len, 1) >>> 0;
  const mem = getUint8ArrayMemory0();
  let offset = 0;
  for (; offset < len; offset++) {
    const code = arg.charCodeAt(offset);
    if (code > 127) break;
    mem[ptr + offset] = code;
  }
  if (offset !== len) {
    if (offset !== 0) {
      arg = arg.slice(offset);
    }
    ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
    const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
    const ret = cachedTextEncoder.encodeInto(arg, view);
    offset += ret.written;
    ptr = realloc(ptr, len, offset, 1) >>> 0;
  }
  WASM_VECTOR_LEN = offset;
  return ptr;
}
function takeFromExternrefTable0(idx) {
  const value = wasm.__wbindgen_externrefs.get(idx);
  wasm.__externref_table_dealloc(idx);
  return value;
}
var cachedTextDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
cachedTextDecoder.decode();
var MAX_SAFARI_DECODE_BYTES = 2146435072;
var numBytesDecoded = 0;
function decodeText(bytes2) {
  numBytesDecoded += bytes2.length;
  if (numBytesDecoded >= MAX_SAFARI_DECODE_BYTES) {
    cachedTextDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
    cachedTextDecoder.decode();
    numBytesDecoded = bytes2.length;
  }
  return cachedTextDecoder.decode(bytes2);
}
var cachedTextEncoder = new TextEncoder();
if (!("encodeInto" in cachedTextEncoder)) {
  cachedTextEncoder.encodeInto = function(arg, view) {
    const buf = cachedTextEncoder.encode(arg);
    view.set(buf);
    return {
      read: arg.length,
      written: buf.length
    };
  };
}
var WASM_VECTOR_LEN = 0;
var wasmModule;
var wasmInstance;
var wasm;
function __wbg_finalize_init(instance, module2) {
  wasmInstance = instance;
  wasm = instance.exports;
  wasmModule = module2;
  cachedDataViewMemory0 = null;
  cachedFloat64ArrayMemory0 = null;
  cachedUint32ArrayMemory0 = null;
  cachedUint8ArrayMemory0 = null;
  wasm.__wbindgen_start();
  return wasm;
}
function initSync(module2) {
  if (wasm !== void 0) return wasm;
  if (module2 !== void 0) {
    if (Object.getPrototypeOf(module2) === Object.prototype) {
      ({ module: module2 } = module2);
    } else {
      console.warn("using deprecated parameters for `initSync()`; pass a single object instead");
    }
  }
  const imports = __wbg_get_imports();
  if (!(module2 instanceof WebAssembly.Module)) {
    module2 = new WebAssembly.Module(module2);
  }
  const instance = new WebAssembly.Instance(module2, imports);
  return __wbg_finalize_init(instance, module2);
}

// js/lessor.js
var MAX_TIMER_MS = 2 ** 31 - 1;
var MAX_EPOCH_MS = 864e13;
var MAX_TTL_MS = 9e12;
var ready = false;
function markReady() {
  ready = true;
}
var LeaseError = class extends Error {
  constructor(code, message, extra) {
    super(message);
    this.name = "LeaseError";
    this.code = code;
    if (extra) Object.assign(this, extra);
  }
};
var LeaseEvent = class extends Event {
  constructor(type, init2 = {}) {
    super(type);
    this.lease = init2.lease ?? null;
    this.key = init2.key ?? null;
    this.keys = init2.keys ?? [];
    this.revision = init2.revision ?? 0;
    this.ttl = init2.ttl ?? 0;
  }
};
function invalid(message) {
  return new LeaseError("InvalidArgument", message);
}
function rethrow(e) {
  if (e instanceof LeaseError) throw e;
  if (e && typeof e.code === "string") {
    throw new LeaseError(e.code, e.message, e.entry ? { entry: e.entry } : void 0);
  }
  throw new LeaseError("Internal", `edge-lease internal error: ${e && e.message ? e.message : e}`);
}
var idHi = 0;
var idLo = 0;
var HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX_VALUE["0123456789abcdef".charCodeAt(i)] = i;
function hexHalf(s, from) {
  let v = 0;
  for (let i = from; i < from + 8; i++) {
    const c = s.charCodeAt(i);
    const d = c < 128 ? HEX_VALUE[c] : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}
function parseId(id, what = "lease id") {
  if (typeof id === "string") {
    const h = id.length === 16 ? hexHalf(id, 0) : -1;
    const l = h < 0 ? -1 : hexHalf(id, 8);
    if (l < 0) {
      throw invalid(`${what} must be 16 lowercase hex digits, got ${JSON.stringify(id.slice(0, 40))}`);
    }
    idHi = h;
    idLo = l;
    return;
  }
  if (typeof id === "bigint") {
    if (id < -(2n ** 63n) || id >= 2n ** 64n) throw invalid(`${what} ${id} is outside 64 bits`);
    const u = BigInt.asUintN(64, id);
    idHi = Number(u >> 32n);
    idLo = Number(u & 0xffffffffn);
    return;
  }
  throw invalid(`${what} must be a 16-digit hex string or a bigint, got ${typeof id}`);
}
var HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
var memory = null;
var bytes = new Uint8Array(0);
var utf8 = new TextDecoder();
function readValue(ptr, len, text) {
  if (bytes.byteLength === 0) {
    memory ??= RawLessor.memory();
    bytes = new Uint8Array(memory.buffer);
  }
  if (!text) return bytes.slice(ptr, ptr + len);
  if (len <= 32) {
    let s = "";
    for (let i = ptr, end = ptr + len; i < end; i++) {
      const c = bytes[i];
      if (c > 127) return utf8.decode(bytes.subarray(ptr, ptr + len));
      s += String.fromCharCode(c);
    }
    return s;
  }
  return utf8.decode(bytes.subarray(ptr, ptr + len));
}
function hex8(n) {
  return HEX_BYTE[n >>> 24] + HEX_BYTE[n >>> 16 & 255] + HEX_BYTE[n >>> 8 & 255] + HEX_BYTE[n & 255];
}
var lastHi = -1;
var lastLo = -1;
var lastId = "";
function formatId(hi, lo) {
  if (hi !== lastHi || lo !== lastLo) {
    lastHi = hi;
    lastLo = lo;
    lastId = hex8(hi) + hex8(lo);
  }
  return lastId;
}
function unflatten(meta, keys) {
  const out = [];
  let off = 0;
  for (let p = 0; p < meta.length; ) {
    const id = formatId(meta[p], meta[p + 1]);
    const revision = meta[p + 2];
    const n = meta[p + 3];
    p += 4;
    const list = new Array(n);
    for (let i = 0; i < n; i++) {
      const len = meta[p++];
      list[i] = keys.slice(off, off + len);
      off += len;
    }
    out.push({ id, keys: list, revision });
  }
  return out;
}
function leaseOrNull(hi, lo) {
  return hi === 0 && lo === 0 ? null : formatId(hi, lo);
}
function checkKey(key, max, what = "key") {
  if (typeof key !== "string") throw invalid(`${what} must be a string, got ${typeof key}`);
  if (key.length > max) throw invalid(`${what} is longer than ${max} bytes`);
}
function checkInt(value, what) {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw invalid(`${what} must be a whole number, got ${typeof value === "number" ? value : typeof value}`);
  }
}
function checkMs(value, what) {
  checkInt(value, what);
  if (value > MAX_TTL_MS) throw invalid(`${what} must be at most ${MAX_TTL_MS} ms`);
}
function checkLimit(options2, name, fallback, max) {
  const v = options2[name] ?? fallback;
  checkInt(v, name);
  if (v < 1 || v > max) throw invalid(`${name} must be between 1 and ${max}`);
  return v;
}
function options(arg, what) {
  if (arg === void 0 || arg === null) return {};
  if (typeof arg !== "object") throw invalid(`${what} options must be an object`);
  return arg;
}
var Lessor = class extends EventTarget {
  #raw;
  #now;
  #scratch;
  #closed = false;
  #busy = false;
  #maxKey;
  #maxValue;
  #wants = /* @__PURE__ */ Object.create(null);
  // Expiry timer.
  #autoTick;
  #timer = null;
  #timerAt = Infinity;
  // Storage.
  #storage = null;
  #queue = [];
  #inFlight = false;
  #failed = null;
  #idle = [];
  constructor(opts = {}) {
    super();
    if (!ready) {
      throw new LeaseError(
        "NotInitialized",
        "edge-lease is not initialized: in a browser, `await init()` first"
      );
    }
    opts = options(opts, "Lessor");
    const now = opts.now ?? Date.now;
    if (typeof now !== "function") throw invalid("now must be a function returning epoch milliseconds");
    this.#now = now;
    const minTtl = checkLimit(opts, "minTtl", 1, 9e9);
    const revokeRate = checkLimit(opts, "revokeRate", 1e3, 2 ** 32 - 1);
    this.#maxKey = checkLimit(opts, "maxKeyBytes", 4096, 2 ** 31);
    this.#maxValue = checkLimit(opts, "maxValueBytes", 1 << 20, 2 ** 31);
    const maxKeys = checkLimit(opts, "maxKeysPerLease", 1e4, 2 ** 31);
    this.#autoTick = opts.autoTick ?? true;
    const config = [minTtl, revokeRate, this.#maxKey, this.#maxValue, maxKeys];
    if (opts.storage !== void 0 && opts.storage !== null) {
      if (typeof opts.storage.write !== "function") throw invalid("storage must have a write(batch) method");
      this.#storage = opts.storage;
    }
    if (opts.restore !== void 0 || this.#storage) {
      const entries = [];
      if (opts.restore !== void 0 && opts.restore !== null) {
        if (typeof opts.restore[Symbol.iterator] !== "function") {
          throw invalid("restore must be an iterable of [key, value] entries");
        }
        for (const entry of opts.restore) {
          if (!Array.isArray(entry) || typeof entry[0] !== "string" || !(typeof entry[1] === "string" || entry[1] instanceof Uint8Array)) {
            throw invalid("restore entries must be [string, Uint8Array | string] pairs");
          }
          entries.push(entry);
        }
      }
      const write = this.#storage ? (batch) => this.#write(batch) : void 0;
      try {
        this.#raw = RawLessor.restore(...config, entries, this.#time(), write);
      } catch (e) {
        rethrow(e);
      }
    } else {
      try {
        this.#raw = new RawLessor(...config);
      } catch (e) {
        rethrow(e);
      }
    }
    this.#scratch = this.#raw.scratch();
    this.#schedule();
  }
  // Only dispatch events someone listens for: building them costs more than
  // the operation itself.
  addEventListener(type, listener, opts) {
    this.#wants[type] = true;
    super.addEventListener(type, listener, opts);
  }
  #emit(type, init2) {
    if (this.#wants[type]) this.dispatchEvent(new LeaseEvent(type, init2));
  }
  #time() {
    const t = this.#now();
    if (typeof t !== "number" || !Number.isFinite(t) || Math.abs(t) > MAX_EPOCH_MS) {
      throw invalid(`the clock returned ${String(t)}, not epoch milliseconds`);
    }
    return Math.floor(t);
  }
  #enter() {
    if (this.#closed) throw new LeaseError("Closed", "the lessor is closed");
    if (this.#busy) {
      throw new LeaseError("Reentrant", "the lessor was called from inside its own storage callback");
    }
  }
  #enterWrite() {
    this.#enter();
    if (this.#failed) {
      throw new LeaseError("StorageFailed", `an earlier storage write failed: ${this.#failed.message}`);
    }
  }
  #s() {
    if (this.#scratch.length === 0) this.#scratch = this.#raw.scratch();
    return this.#scratch;
  }
  /** Grants a lease of `ttl` whole seconds. Returns `{ id, ttl }`. */
  grant(ttl, opts) {
    this.#enterWrite();
    checkInt(ttl, "ttl");
    const o = options(opts, "grant");
    if (o.id === void 0 || o.id === null) {
      idHi = 0;
      idLo = 0;
    } else {
      parseId(o.id);
    }
    const now = this.#time();
    this.#busy = true;
    try {
      this.#raw.grant(now, ttl, idHi, idLo);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    const s = this.#s();
    const id = formatId(s[0], s[1]);
    const granted = s[2];
    if (now + granted * 1e3 < this.#timerAt) this.#schedule();
    this.#emit("grant", { lease: id, ttl: granted });
    return { id, ttl: granted };
  }
  /** Renews a lease: its deadline becomes now + its TTL. Returns the TTL. */
  renew(id) {
    this.#enterWrite();
    parseId(id);
    const hi = idHi;
    const lo = idLo;
    const now = this.#time();
    let ttl;
    this.#busy = true;
    try {
      ttl = this.#raw.renew(now, idHi, idLo);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    if (this.#wants.renew) this.#emit("renew", { lease: formatId(hi, lo), ttl });
    return ttl;
  }
  /** Revokes a lease and deletes its keys. Returns `{ id, keys, revision }`. */
  revoke(id) {
    this.#enterWrite();
    parseId(id);
    const now = this.#time();
    let r;
    this.#busy = true;
    try {
      r = this.#raw.revoke(now, idHi, idLo);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    const out = unflatten(r, this.#raw.take_keys())[0];
    this.#emit("revoke", { lease: out.id, keys: out.keys, revision: out.revision });
    return out;
  }
  /** `{ id, ttl, ttlMs, grantedTtl, keys }`; ttl is -1 if the lease is gone. */
  timeToLive(id, opts) {
    this.#enter();
    parseId(id);
    id = formatId(idHi, idLo);
    const withKeys = Boolean(options(opts, "timeToLive").keys);
    const keys = this.#raw.time_to_live(this.#time(), idHi, idLo, withKeys);
    if (keys === void 0) return { id, ttl: -1, ttlMs: -1, grantedTtl: 0, keys: [] };
    const s = this.#s();
    return { id, ttl: s[0], ttlMs: s[1], grantedTtl: s[2], keys };
  }
  /** Live lease ids, soonest deadline first. */
  leases() {
    this.#enter();
    const flat = this.#raw.leases(this.#time());
    const ids = new Array(flat.length / 2);
    for (let i = 0; i < ids.length; i++) ids[i] = formatId(flat[2 * i], flat[2 * i + 1]);
    return ids;
  }
  /**
   * Writes a key. Options: `lease` (attach to it; omitted detaches),
   * `ifAbsent` (create-only: the lock pattern), `prevKv` (return the previous entry).
   * Returns `{ revision, created, prev? }`; a refused `ifAbsent` put returns the holder as `prev`.
   */
  put(key, value, opts) {
    this.#enterWrite();
    checkKey(key, this.#maxKey);
    const o = options(opts, "put");
    const text = typeof value === "string";
    if (!text && !(value instanceof Uint8Array)) {
      throw invalid(`value must be a string or a Uint8Array, got ${typeof value}`);
    }
    if (value.length > this.#maxValue) throw invalid(`value is longer than ${this.#maxValue} bytes`);
    if (o.lease === void 0 || o.lease === null) {
      idHi = 0;
      idLo = 0;
    } else {
      parseId(o.lease, "lease");
    }
    const lease = o.lease ?? null;
    const ifAbsent = Boolean(o.ifAbsent);
    const now = this.#time();
    const prev = o.prevKv ? this.#entry(now, key) : void 0;
    let revision;
    this.#busy = true;
    try {
      revision = text ? this.#raw.put_str(now, key, value, idHi, idLo, ifAbsent) : this.#raw.put_bytes(now, key, value, idHi, idLo, ifAbsent);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    const created = this.#s()[0] === 1;
    if (ifAbsent && !created) {
      return { revision, created, prev: this.#entry(now, key) };
    }
    this.#emit("put", { key, lease, keys: [key], revision });
    return o.prevKv ? { revision, created, prev } : { revision, created };
  }
  #entry(now, key) {
    if (!this.#raw.get(now, key)) return void 0;
    const s = this.#s();
    return {
      key,
      value: readValue(s[5], s[6], s[7] === 1),
      lease: leaseOrNull(s[3], s[4]),
      createRevision: s[0],
      modRevision: s[1],
      version: s[2]
    };
  }
  /** `{ key, value, lease, createRevision, modRevision, version }`, or undefined. */
  get(key) {
    this.#enter();
    checkKey(key, this.#maxKey);
    return this.#entry(this.#time(), key);
  }
  /** Live entries whose key starts with `prefix`, sorted; `range("")` is everything. */
  range(prefix = "") {
    this.#enter();
    checkKey(prefix, this.#maxKey, "prefix");
    const rows = this.#raw.range(this.#time(), prefix);
    return rows.map((r) => ({
      key: r[0],
      value: r[1],
      lease: leaseOrNull(r[5], r[6]),
      createRevision: r[2],
      modRevision: r[3],
      version: r[4]
    }));
  }
  /** Deletes a key. Returns `{ deleted, revision, prev? }`. */
  delete(key, opts) {
    this.#enterWrite();
    checkKey(key, this.#maxKey);
    const o = options(opts, "delete");
    const now = this.#time();
    const prev = o.prevKv ? this.#entry(now, key) : void 0;
    let revision;
    this.#busy = true;
    try {
      revision = this.#raw.delete(now, key);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    const s = this.#s();
    const deleted = s[0] === 1;
    if (deleted) this.#emit("delete", { key, lease: leaseOrNull(s[1], s[2]), keys: [key], revision });
    return o.prevKv ? { deleted, revision, prev } : { deleted, revision };
  }
  /** Expires what is due now (rate-limited). Returns `[{ id, keys, revision }]`. */
  tick() {
    this.#enterWrite();
    const now = this.#time();
    let rows;
    let error;
    this.#busy = true;
    try {
      rows = this.#raw.tick(now);
      error = this.#raw.take_tick_error();
    } finally {
      this.#busy = false;
    }
    const out = rows.length === 0 ? [] : unflatten(rows, this.#raw.take_keys());
    for (const e of out) this.#emit("expire", { lease: e.id, keys: e.keys, revision: e.revision });
    this.#schedule();
    if (error !== void 0) {
      throw new LeaseError(error.code, error.message, { expired: out });
    }
    return out;
  }
  /** Epoch ms at which `tick` next has work, or null. */
  nextDeadline() {
    this.#enter();
    const d = this.#raw.next_deadline();
    return Number.isNaN(d) ? null : d;
  }
  /** Becomes primary: every lease gets now + extendMs + its remaining time. */
  promote(extendMs = 0) {
    this.#enterWrite();
    checkMs(extendMs, "extendMs");
    const now = this.#time();
    this.#busy = true;
    try {
      this.#raw.promote(now, extendMs);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
    this.#schedule();
  }
  /** Becomes standby: no expiry, renew fails with NotPrimary. */
  demote() {
    this.#enterWrite();
    this.#raw.demote(this.#time());
    this.#schedule();
  }
  /** Records a lease's remaining time for the next promotion (etcd's checkpoint). */
  checkpoint(id, remainingMs) {
    this.#enterWrite();
    parseId(id);
    checkMs(remainingMs, "remainingMs");
    const now = this.#time();
    this.#busy = true;
    try {
      this.#raw.checkpoint(now, idHi, idLo, remainingMs);
    } catch (e) {
      rethrow(e);
    } finally {
      this.#busy = false;
    }
  }
  /** The revision of the last change. */
  get revision() {
    this.#enter();
    return this.#raw.revision();
  }
  get isPrimary() {
    this.#enter();
    return this.#raw.is_primary();
  }
  /** Everything this lessor holds, as the `[key, Uint8Array]` entries storage would. */
  snapshot() {
    this.#enter();
    return this.#raw.snapshot();
  }
  /** Bytes of wasm linear memory (shared by every lessor in this module): a diagnostic. */
  memoryBytes() {
    return RawLessor.memory_bytes();
  }
  /** Resolves when every storage write so far is durable; rejects if one failed. */
  flush() {
    if (this.#failed) return Promise.reject(this.#storageError());
    if (!this.#inFlight && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.#idle.push({ resolve, reject }));
  }
  /** Stops the timer and frees the wasm memory. Later calls throw code "Closed". */
  close() {
    if (this.#closed) return;
    if (this.#busy) {
      throw new LeaseError("Reentrant", "the lessor was closed from inside its own storage callback");
    }
    this.#closed = true;
    this.#clearTimer();
    this.#raw.free();
    this.#raw = null;
  }
  // ---- storage -----------------------------------------------------------
  #storageError() {
    return new LeaseError("StorageFailed", `storage write failed: ${this.#failed.message ?? this.#failed}`);
  }
  // Called from inside wasm with one batch per operation. A synchronous throw
  // fails the operation (the core changes nothing). A promise is chained:
  // batches go to storage one at a time, in order.
  #write(batch) {
    if (this.#inFlight) {
      this.#queue.push(batch);
      return;
    }
    const r = this.#storage.write(batch);
    if (r && typeof r.then === "function") {
      this.#inFlight = true;
      r.then(() => this.#drain(), (e) => this.#fail(e));
    }
  }
  #drain() {
    while (this.#queue.length > 0 && !this.#failed) {
      const batch = this.#queue.shift();
      let r;
      try {
        r = this.#storage.write(batch);
      } catch (e) {
        this.#fail(e);
        return;
      }
      if (r && typeof r.then === "function") {
        r.then(() => this.#drain(), (e) => this.#fail(e));
        return;
      }
    }
    this.#inFlight = false;
    for (const w of this.#idle.splice(0)) w.resolve();
  }
  #fail(e) {
    this.#failed = e instanceof Error ? e : new Error(String(e));
    this.#inFlight = false;
    this.#queue.length = 0;
    this.#clearTimer();
    const err = this.#storageError();
    for (const w of this.#idle.splice(0)) w.reject(err);
  }
  // ---- expiry timer ------------------------------------------------------
  #clearTimer() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = Infinity;
  }
  // One timer at the next deadline. Renew and revoke only move deadlines
  // later, so they never reschedule: an early wake-up just ticks nothing and
  // sets the timer again.
  #schedule() {
    if (!this.#autoTick || this.#closed || this.#failed) return;
    const at = this.#raw.next_deadline();
    if (Number.isNaN(at)) {
      this.#clearTimer();
      return;
    }
    if (at === this.#timerAt && this.#timer !== null) return;
    this.#clearTimer();
    const delay = Math.min(Math.max(at - this.#time(), 0), MAX_TIMER_MS);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#fire(), delay);
    if (typeof this.#timer === "object" && typeof this.#timer.unref === "function") this.#timer.unref();
  }
  #fire() {
    this.#timer = null;
    this.#timerAt = Infinity;
    if (this.#closed || this.#failed) return;
    try {
      this.tick();
    } catch (e) {
      this.dispatchEvent(Object.assign(new Event("error"), { error: e }));
      return;
    }
  }
};

// js/cjs.mjs
initSync({ module: (0, import_node_fs.readFileSync)((0, import_node_path.join)(__dirname, "..", "pkg", "edge_lease_bg.wasm")) });
markReady();
async function init() {
}
// Annotate the CommonJS export names for ESM import in node:
0 && (module.exports = {
  LeaseError,
  LeaseEvent,
  Lessor,
  init
});
