//! common.h: the opaque handles and the library's deallocator.

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::c_void;

/// Declares an opaque C type: it can only be used behind a pointer, and is neither `Send`,
/// `Sync` nor `Unpin` by itself (the safe crate decides what each handle allows).
macro_rules! opaque {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    };
}

opaque!(
    /// `pagoda_model_t`: a model opened from a GGUF file or a Hugging Face folder.
    pagoda_model_t
);
opaque!(
    /// `pagoda_tokenizer_t`: text to token ids and back.
    pagoda_tokenizer_t
);
opaque!(
    /// `pagoda_mesh_t`: devices arranged on named axes.
    pagoda_mesh_t
);
opaque!(
    /// `pagoda_plan_t`: where each layer runs and how prefill is sliced.
    pagoda_plan_t
);
opaque!(
    /// `pagoda_kv_cache_t`: a paged KV block pool on the mesh's devices.
    pagoda_kv_cache_t
);
opaque!(
    /// `pagoda_engine_t`: the serving loop.
    pagoda_engine_t
);
opaque!(
    /// `pagoda_model_loader_t`: a model open running in the background.
    pagoda_model_loader_t
);
opaque!(
    /// `pagoda_backend_t`: a loaded backend plugin, owned by the process-wide registry.
    pagoda_backend_t
);
opaque!(
    /// `pagoda_backend_iface_t`: a plugin's raw interface table. Declared opaque: this binding
    /// serves hosts, not plugins, and never reads the table.
    pagoda_backend_iface_t
);

extern "C" {
    /// Releases memory that a pagoda function returned for the caller to own; NULL is ignored.
    pub fn pagoda_free(ptr: *mut c_void);
}
