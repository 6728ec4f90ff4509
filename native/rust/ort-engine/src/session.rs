//! One ONNX Runtime session and its synchronous run on raw tensor bytes.
//!
//! Sessions are opened through the `ort` crate (environment, options, metadata); a run goes
//! straight to the C API (`CreateTensorWithDataAsOrtValue`, `Run`, `GetTensorMutableData`) with
//! the input and output names kept as C strings from the open, so a run allocates nothing of its
//! own beyond what ONNX Runtime allocates for the outputs (and a copy of an input whose bytes are
//! not aligned to its element size).
use ort::memory::MemoryInfo;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::sys;
use ort::value::ValueType;
use ort::AsPointer;
use std::ffi::{c_void, CStr, CString};
use std::ptr;
use std::sync::OnceLock;

/// Most dimensions a tensor passed through the engine may have.
pub const MAX_RANK: usize = 32;

static ENV: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

/// Loads ONNX Runtime from `lib_path` and creates the process's environment (once; later calls
/// return the first call's outcome whatever their path).
pub fn init(lib_path: &str) -> Result<(), String> {
    ENV.get_or_init(|| {
        let builder = ort::init_from(lib_path).map_err(|e| format!("cannot load ONNX Runtime: {e}"))?;
        builder.with_name("warden").build().map_err(|e| format!("cannot create the ONNX Runtime environment: {e}"))
    })
    .as_ref()
    .map(|_| ())
    .map_err(|e| e.clone())
}

fn env() -> Result<&'static ort::environment::Environment, String> {
    match ENV.get() {
        Some(Ok(env)) => Ok(env),
        Some(Err(e)) => Err(e.clone()),
        None => Err("the ONNX Runtime engine is not initialized".into()),
    }
}

/// An ONNX element type code (TensorProto.DataType) the engine passes → its bytes per element and
/// ONNX Runtime's enum; None for the others (strings, sub-byte and 8-bit float types, complex).
fn element(elem_type: i32) -> Option<(usize, sys::ONNXTensorElementDataType)> {
    use sys::ONNXTensorElementDataType as T;
    Some(match elem_type {
        1 => (4, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT),
        2 => (1, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8),
        3 => (1, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8),
        4 => (2, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16),
        5 => (2, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16),
        6 => (4, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32),
        7 => (8, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64),
        9 => (1, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL),
        10 => (2, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16),
        11 => (8, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE),
        12 => (4, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32),
        13 => (8, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64),
        16 => (2, T::ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16),
        _ => return None,
    })
}

/// Turns an ONNX Runtime status into a Result (releasing the status).
fn check(status: sys::OrtStatusPtr) -> Result<(), String> {
    if status.0.is_null() {
        return Ok(());
    }
    let api = ort::api();
    // SAFETY: a non-null status from the C API; its message lives until ReleaseStatus.
    let msg = unsafe { CStr::from_ptr((api.GetErrorMessage)(status.0)) }.to_string_lossy().into_owned();
    // SAFETY: the status is released once, after its message was copied.
    unsafe { (api.ReleaseStatus)(status.0) };
    Err(msg)
}

/// An OrtValue ONNX Runtime allocated for an output; released when dropped unless handed out.
pub struct OwnedValue(*mut sys::OrtValue);

impl OwnedValue {
    /// Gives up ownership (the caller releases it with [`release_value`]).
    pub fn into_raw(mut self) -> *mut c_void {
        std::mem::replace(&mut self.0, ptr::null_mut()).cast()
    }
}

impl Drop for OwnedValue {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: an OrtValue this engine owns.
            unsafe { (ort::api().ReleaseValue)(self.0) };
        }
    }
}

/// Releases an output value handed out by [`OwnedValue::into_raw`].
///
/// # Safety
/// `value` came from `into_raw` and is released once.
pub unsafe fn release_value(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: the caller's contract: an OrtValue from `into_raw`, released once.
        unsafe { (ort::api().ReleaseValue)(value.cast()) };
    }
}

/// One input of a run: which session input, its type, shape and bytes (borrowed for the run).
pub struct RunInput<'a> {
    pub index: usize,
    pub elem_type: i32,
    pub shape: &'a [i64],
    pub data: &'a [u8],
}

/// One output of a run: its type, shape and bytes (valid while `value` lives).
pub struct RunOutput {
    pub value: OwnedValue,
    pub elem_type: i32,
    pub shape: Vec<i64>,
    pub data: *const u8,
    pub bytes: usize,
}

/// A session opened from a model file, with its inputs' and outputs' names and element types
/// (0 = not a tensor or not a type the engine passes).
pub struct WoSession {
    session: Session,
    memory: MemoryInfo<'static>,
    pub input_names: Vec<CString>,
    pub input_types: Vec<i32>,
    pub output_names: Vec<CString>,
    pub output_types: Vec<i32>,
}

fn outlet_type(t: &ValueType) -> i32 {
    match t.tensor_type() {
        Some(ty) => {
            let code = sys::ONNXTensorElementDataType::from(ty) as i32;
            if element(code).is_some() {
                code
            } else {
                0
            }
        }
        None => 0,
    }
}

impl WoSession {
    /// Opens `path` with `intra` / `inter` op threads and every graph optimization.
    pub fn open(path: &str, intra: usize, inter: usize) -> Result<WoSession, String> {
        let env = env()?;
        let fail = |e: ort::Error| e.to_string();
        let mut builder = Session::builder(env)
            .map_err(fail)?
            .with_intra_threads(intra)
            .map_err(|e| e.to_string())?
            .with_inter_threads(inter)
            .map_err(|e| e.to_string())?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(|e| e.to_string())?;
        let session = builder.commit_from_file(path).map_err(fail)?;
        let names = |list: &[ort::value::Outlet]| -> Result<Vec<CString>, String> {
            list.iter()
                .map(|o| CString::new(o.name()).map_err(|_| format!("tensor name '{}' holds a NUL", o.name())))
                .collect()
        };
        let input_names = names(session.inputs())?;
        let output_names = names(session.outputs())?;
        let input_types = session.inputs().iter().map(|o| outlet_type(o.dtype())).collect();
        let output_types = session.outputs().iter().map(|o| outlet_type(o.dtype())).collect();
        Ok(WoSession { session, memory: MemoryInfo::default(), input_names, input_types, output_names, output_types })
    }

    /// Runs the session on `inputs`, computing the outputs at `outputs` (indices into
    /// `output_names`), on the calling thread.
    /// Errors: an index out of range, an unsupported type, a shape whose byte size is not the
    /// data's, a rank over [`MAX_RANK`], or ONNX Runtime's own message.
    pub fn run(&self, inputs: &[RunInput<'_>], outputs: &[usize]) -> Result<Vec<RunOutput>, String> {
        let api = ort::api();
        let mut values: Vec<OwnedValue> = Vec::with_capacity(inputs.len());
        let mut names = Vec::with_capacity(inputs.len());
        // inputs whose bytes are not aligned to their element size are copied (u64 = 8-aligned)
        let mut copies: Vec<Vec<u64>> = Vec::new();
        for input in inputs {
            let name =
                self.input_names.get(input.index).ok_or_else(|| format!("input index {} out of range", input.index))?;
            let (size, sys_type) =
                element(input.elem_type).ok_or_else(|| format!("element type {} is not supported", input.elem_type))?;
            if input.shape.len() > MAX_RANK {
                return Err(format!(
                    "input '{}' has {} dimensions (at most {MAX_RANK})",
                    name.to_string_lossy(),
                    input.shape.len()
                ));
            }
            let mut count: usize = 1;
            for &d in input.shape {
                let d = usize::try_from(d)
                    .map_err(|_| format!("input '{}' has a negative dimension", name.to_string_lossy()))?;
                count = count.checked_mul(d).ok_or("input shape overflows")?;
            }
            let bytes = count.checked_mul(size).ok_or("input shape overflows")?;
            if bytes != input.data.len() {
                return Err(format!(
                    "input '{}' holds {} bytes, its shape needs {bytes}",
                    name.to_string_lossy(),
                    input.data.len()
                ));
            }
            let mut data = input.data.as_ptr();
            if bytes == 0 || (data as usize) % size != 0 {
                let mut copy = vec![0u64; bytes.div_ceil(8).max(1)];
                // SAFETY: the copy holds at least `bytes` bytes; the source is `bytes` long.
                unsafe { ptr::copy_nonoverlapping(data, copy.as_mut_ptr().cast::<u8>(), bytes) };
                data = copy.as_ptr().cast();
                copies.push(copy);
            }
            let mut value: *mut sys::OrtValue = ptr::null_mut();
            // SAFETY: `data` is valid for `bytes` until the run returns (borrowed input or a copy
            // held in `copies`); ONNX Runtime only reads an input tensor.
            check(unsafe {
                (api.CreateTensorWithDataAsOrtValue)(
                    self.memory.ptr(),
                    data.cast_mut().cast(),
                    bytes,
                    input.shape.as_ptr(),
                    input.shape.len(),
                    sys_type,
                    &mut value,
                )
            })?;
            values.push(OwnedValue(value));
            names.push(name.as_ptr());
        }
        let mut out_names = Vec::with_capacity(outputs.len());
        for &i in outputs {
            out_names.push(self.output_names.get(i).ok_or_else(|| format!("output index {i} out of range"))?.as_ptr());
        }
        let in_values: Vec<*const sys::OrtValue> = values.iter().map(|v| v.0.cast_const()).collect();
        let mut out_values: Vec<*mut sys::OrtValue> = vec![ptr::null_mut(); outputs.len()];
        // SAFETY: names and values are parallel arrays of the lengths given; the session lives.
        let status = unsafe {
            (api.Run)(
                self.session.ptr().cast_mut(),
                ptr::null(),
                names.as_ptr(),
                in_values.as_ptr(),
                in_values.len(),
                out_names.as_ptr(),
                out_names.len(),
                out_values.as_mut_ptr(),
            )
        };
        // own every output ONNX Runtime made before anything can fail, so none leaks
        let owned: Vec<OwnedValue> = out_values.into_iter().map(OwnedValue).collect();
        check(status)?;
        drop(values);
        drop(copies);
        owned.into_iter().map(describe).collect()
    }
}

/// Reads an output's type, shape and data pointer.
fn describe(value: OwnedValue) -> Result<RunOutput, String> {
    let api = ort::api();
    if value.0.is_null() {
        return Err("ONNX Runtime returned no value for an output".into());
    }
    let mut info: *mut sys::OrtTensorTypeAndShapeInfo = ptr::null_mut();
    // SAFETY: a live OrtValue; a non-tensor output fails here with ONNX Runtime's message.
    check(unsafe { (api.GetTensorTypeAndShape)(value.0, &mut info) })?;
    let read = || -> Result<(i32, Vec<i64>), String> {
        let mut ty = sys::ONNXTensorElementDataType::ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
        let mut rank = 0usize;
        // SAFETY: `info` is live until released below.
        check(unsafe { (api.GetTensorElementType)(info, &mut ty) })?;
        // SAFETY: as above.
        check(unsafe { (api.GetDimensionsCount)(info, &mut rank) })?;
        if rank > MAX_RANK {
            return Err(format!("an output has {rank} dimensions (at most {MAX_RANK})"));
        }
        let mut shape = vec![0i64; rank];
        // SAFETY: `info` is live; `shape` has room for the `rank` dimensions written.
        check(unsafe { (api.GetDimensions)(info, shape.as_mut_ptr(), rank) })?;
        Ok((ty as i32, shape))
    };
    let read = read();
    // SAFETY: released once.
    unsafe { (api.ReleaseTensorTypeAndShapeInfo)(info) };
    let (elem_type, shape) = read?;
    let (size, _) = element(elem_type)
        .ok_or_else(|| format!("output element type {elem_type} is not supported by the native engine"))?;
    let mut count: usize = 1;
    for &d in &shape {
        count = count
            .checked_mul(usize::try_from(d).map_err(|_| "output has a negative dimension")?)
            .ok_or("output shape overflows")?;
    }
    let bytes = count.checked_mul(size).ok_or("output shape overflows")?;
    let mut data: *mut c_void = ptr::null_mut();
    if bytes > 0 {
        // SAFETY: a live tensor value.
        check(unsafe { (api.GetTensorMutableData)(value.0, &mut data) })?;
    }
    Ok(RunOutput { value, elem_type, shape, data: data.cast_const().cast(), bytes })
}
