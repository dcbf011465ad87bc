//! What attaching a program shares, for the loader and the syscall hooks
//! alike: finding a program in the object, loading and attaching it to a
//! raw tracepoint, the errors that name what failed, and [`Unavailable`],
//! a measurement this run goes without and why.

use aya::programs::raw_trace_point::RawTracePointLink;
use aya::programs::RawTracePoint;
use aya::Ebpf;

use crate::error::ProbeError;

pub use redoctor_probes_common::Unavailable;

pub(crate) fn program<'a, T>(bpf: &'a mut Ebpf, name: &str) -> Result<&'a mut T, ProbeError>
where
    &'a mut T: TryFrom<&'a mut aya::programs::Program>,
{
    bpf.program_mut(name)
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| ProbeError::Missing {
            what: "program",
            name: name.to_string(),
        })
}

/// Loads `prog` and attaches it to the raw tracepoint `tp`; the caller
/// keeps the link.
pub(crate) fn attach_raw(
    bpf: &mut Ebpf,
    prog: &str,
    tp: &str,
) -> Result<RawTracePointLink, ProbeError> {
    let p: &mut RawTracePoint = program(bpf, prog)?;
    p.load().map_err(|e| load_err(prog, e))?;
    let id = p.attach(tp).map_err(|e| ProbeError::Attach {
        program: prog.to_string(),
        target: format!("raw tracepoint {tp}"),
        source: Box::new(e),
    })?;
    p.take_link(id).map_err(|e| taken(prog, e))
}

/// A link aya just returned the id of could not be taken from its program.
pub(crate) fn taken(prog: &str, e: aya::programs::ProgramError) -> ProbeError {
    ProbeError::Attach {
        program: prog.to_string(),
        target: "its new link (taking it over from the program)".into(),
        source: Box::new(e),
    }
}

pub(crate) fn load_err(prog: &str, e: aya::programs::ProgramError) -> ProbeError {
    ProbeError::ProgramLoad {
        program: prog.to_string(),
        source: Box::new(e),
    }
}
