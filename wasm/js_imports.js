// Link-time stubs for the functions the C shims import from JS (ckpt_wasm.c). The real ones are
// supplied by js/wasm.js at instantiation; these only let the link find the names.
mergeInto(LibraryManager.library, {
  ckpt_js_read: function () { return -1; },
  ckpt_js_write: function () { return -1; },
  ckpt_js_progress: function () { return 0; },
});
