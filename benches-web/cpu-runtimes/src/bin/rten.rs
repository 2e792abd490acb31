use cpu_runtimes::{argmax, bench, mask, timed, Args};
use rten::{Model, Value, ValueOrView};
use rten_tensor::prelude::*;
use rten_tensor::{NdTensor, Tensor};

fn main() {
    let args = Args::parse();
    let model = timed("load", || {
        Model::load_file(&args.model).expect("an ONNX model")
    });
    let id = |name: String| {
        model
            .node_id(&name)
            .expect("an input or output of the export")
    };
    let (ids_in, pos_in, mask_in) = (
        id("input_ids".into()),
        id("position_ids".into()),
        id("attention_mask".into()),
    );
    let past: Vec<_> = (0..args.layers)
        .flat_map(|l| [id(format!("past_key_{l}")), id(format!("past_value_{l}"))])
        .collect();
    let outs: Vec<_> = std::iter::once(id("logits".into()))
        .chain((0..args.layers).flat_map(|l| {
            [
                id(format!("present_key_{l}")),
                id(format!("present_value_{l}")),
            ]
        }))
        .collect();
    let empty: Vec<Tensor<f32>> = (0..2 * args.layers)
        .map(|_| NdTensor::<f32, 3>::zeros([args.kv_heads, 0, args.head_dim]).into_dyn())
        .collect();
    bench(&args, empty, |ids, start, cache: &Vec<Tensor<f32>>| {
        let (m, total) = (ids.len(), start + ids.len());
        // rten reads ONNX int64 inputs as i32.
        let mut inputs: Vec<(_, ValueOrView)> = vec![
            (
                ids_in,
                Tensor::from_data(&[m], ids.iter().map(|&v| v as i32).collect::<Vec<_>>()).into(),
            ),
            (
                pos_in,
                Tensor::from_data(&[m], (start..total).map(|p| p as i32).collect::<Vec<_>>())
                    .into(),
            ),
            (
                mask_in,
                Tensor::from_data(&[m, total], mask(m, start)).into(),
            ),
        ];
        inputs.extend(past.iter().zip(cache).map(|(&p, c)| (p, c.view().into())));
        let mut res = model.run(inputs, &outs, None).expect("a run").into_iter();
        let logits: Tensor<f32> = res
            .next()
            .and_then(|v| v.try_into().ok())
            .expect("f32 logits");
        let cache = res
            .map(|v: Value| v.try_into().expect("an f32 cache"))
            .collect();
        (argmax(logits.iter().copied()), cache)
    });
}
