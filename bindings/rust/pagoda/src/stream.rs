//! Streaming: an iterator over an engine's outputs that drives the engine by step and poll.

use crate::engine::Engine;
use crate::error::Result;
use crate::output::Output;

/// Every output of an engine, in the order they are queued, for as long as it has work.
///
/// Each `next` polls; when nothing is queued and a request is waiting or running, it steps the
/// engine and polls again; when nothing is queued and no work is left, it ends. Outputs are
/// those of every request of the engine (poll is engine-wide): match them with
/// [`Output::request_id`]. Other threads may submit, abort and poll meanwhile; an output one of
/// them takes does not come here.
///
/// A failed step comes out as an `Err` item, after which the iteration may go on: the requests
/// it failed end with [`crate::FinishReason::Error`] outputs.
#[derive(Debug)]
pub struct Outputs<'e> {
    engine: &'e Engine,
}

impl<'e> Outputs<'e> {
    pub(crate) fn new(engine: &'e Engine) -> Outputs<'e> {
        Outputs { engine }
    }

    fn advance(&mut self) -> Result<Option<Output>> {
        loop {
            if let Some(output) = self.engine.poll()? {
                return Ok(Some(output));
            }
            if !self.engine.has_work()? {
                return Ok(None);
            }
            self.engine.step()?;
        }
    }
}

impl Iterator for Outputs<'_> {
    type Item = Result<Output>;

    fn next(&mut self) -> Option<Result<Output>> {
        self.advance().transpose()
    }
}
