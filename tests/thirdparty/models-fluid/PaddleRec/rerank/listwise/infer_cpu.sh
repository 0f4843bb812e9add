python infer.py --use_gpu 0 --model_dir './model_dir' --test_epoch 19
