use cpu_runtimes::{argmax, bench, mask, timed, Args};
use tract_onnx::prelude::*;

fn main() -> TractResult<()> {
    let args = Args::parse();
    let model = timed("load", || {
        tract_onnx::onnx()
            .model_for_path(&args.model)?
            .into_optimized()?
            .into_runnable()
    })?;
    let empty: Vec<TValue> = (0..2 * args.layers)
        .map(|_| Ok(Tensor::zero::<f32>(&[args.kv_heads, 0, args.head_dim])?.into()))
        .collect::<TractResult<_>>()?;
    bench(&args, empty, |ids, start, cache: &Vec<TValue>| {
        let (m, total) = (ids.len(), start + ids.len());
        let positions: Vec<i64> = (start as i64..total as i64).collect();
        let mut inputs: TVec<TValue> = tvec![
            tensor1(ids).into(),
            tensor1(&positions).into(),
            Tensor::from_shape(&[m, total], &mask(m, start))
                .expect("the mask's shape")
                .into(),
        ];
        inputs.extend(cache.iter().cloned());
        let out = model.run(inputs).expect("a run");
        let logits = out[0].to_plain_array_view::<f32>().expect("f32 logits");
        (argmax(logits.iter().copied()), out[1..].to_vec())
    });
    Ok(())
}
