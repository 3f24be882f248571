// The viewer's worker: every byte of a checkpoint is read and parsed here, through the package,
// so the page never blocks. It keeps the open Checkpoint handles between requests (worker/
// handles.js): a file is parsed once when it opens; statistics, bytes for the hex view, tensors,
// checks and the pair verdict all use the open handle. Opening another file closes the previous
// ones. Each kind of request is a module of web/worker/; this file only dispatches.
// Protocol: rpc.js ({id, type, args} -> {id, result | error | progress}).
import { serve } from './rpc.js';
import { fileRequests } from './worker/files.js';
import { statsRequests } from './worker/stats.js';
import { checkRequests } from './worker/check.js';
import { healthRequests } from './worker/health.js';
import { exportRequests } from './worker/export.js';
import { runRequests } from './worker/run.js';
import { convertRequests } from './worker/convert.js';
import { torchConvertRequests } from './worker/convert-torch.js';
import { dsConvertRequests, dsUniversalRequests } from './worker/convert-deepspeed.js';

serve({ ...fileRequests, ...statsRequests, ...checkRequests, ...healthRequests, ...exportRequests, ...runRequests, ...convertRequests, ...torchConvertRequests, ...dsConvertRequests, ...dsUniversalRequests });
