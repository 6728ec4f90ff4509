//! {{name}}: L2 normalisation of an FP32 vector, `OUTPUT0 = INPUT0 / max(||INPUT0||_2, epsilon)`,
//! with `epsilon` from the model configuration's `epsilon` parameter (default 1e-12).
//!
//! `wit_bindgen::generate!` reads `wit/` (warden:backend@{{wit}}, pinned by `warden backend new`)
//! and makes the types and traits below; `export!` exports the `backend` interface.

wit_bindgen::generate!({ path: "wit", world: "sandboxed-backend" });

use exports::warden::backend::backend::{Guest, GuestInstance, GuestModel, Instance, InstanceContext, Model, ModelBorrow, ModelContext};
use warden::backend::host::{log, LogLevel};
use warden::backend::types::{DataType, Error, ErrorCode, Request, Response, Tensor};

struct Component;

impl Guest for Component {
    type Model = L2Model;
    type Instance = L2Instance;
}

/// Model-wide state: the configuration, read once when the model loads.
pub struct L2Model {
    epsilon: f32,
}

fn error(code: ErrorCode, message: String) -> Error {
    Error { code, message }
}

impl GuestModel for L2Model {
    fn create(context: ModelContext) -> Result<Model, Error> {
        let config: serde_json::Value = serde_json::from_str(&context.config)
            .map_err(|e| error(ErrorCode::Internal, format!("model '{}': configuration is not JSON: {e}", context.name)))?;
        let text = config["parameters"]["epsilon"]["string_value"].as_str().unwrap_or("1e-12");
        let epsilon: f32 = match text.parse() {
            Ok(v) if v > 0.0 && f32::is_finite(v) => v,
            _ => return Err(error(ErrorCode::InvalidArg, format!("model '{}': parameter epsilon must be a positive number, got '{text}'", context.name))),
        };
        log(LogLevel::Info, &format!("{}: epsilon {epsilon}", context.name));
        Ok(Model::new(L2Model { epsilon }))
    }
}

/// One instance: the model's settings, copied.
pub struct L2Instance {
    epsilon: f32,
}

impl GuestInstance for L2Instance {
    fn create(model: ModelBorrow<'_>, _context: InstanceContext) -> Result<Instance, Error> {
        Ok(Instance::new(L2Instance { epsilon: model.get::<L2Model>().epsilon }))
    }

    /// One response per request, in order: a request's error never fails the others.
    fn execute(&self, requests: Vec<Request>) -> Vec<Result<Response, Error>> {
        requests.iter().map(|r| self.one(r)).collect()
    }
}

impl L2Instance {
    fn one(&self, req: &Request) -> Result<Response, Error> {
        let x = req
            .inputs
            .iter()
            .find(|t| t.name == "INPUT0" && t.datatype == DataType::Fp32)
            .ok_or_else(|| error(ErrorCode::InvalidArg, "input INPUT0 (FP32) is missing".into()))?;
        let values: Vec<f32> = x.data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt().max(self.epsilon);
        let data: Vec<u8> = values.iter().flat_map(|v| (v / norm).to_le_bytes()).collect();
        let outputs = vec![Tensor { name: "OUTPUT0".into(), datatype: DataType::Fp32, shape: x.shape.clone(), data }];
        Ok(Response { outputs: outputs.into_iter().filter(|t| req.requested_outputs.contains(&t.name)).collect(), parameters: vec![] })
    }
}

export!(Component);
